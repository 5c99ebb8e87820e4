"""The emulated Bitbucket refuses what Atlassian's spec does not allow: it can fail a client."""

from __future__ import annotations

import httpx

from tests.fakes.bitbucket_api import TOKEN, FakeBitbucket

PR = "/rest/api/1.0/projects/PRJ/repos/widgets/pull-requests/3"


def _client() -> httpx.Client:
    return httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"})


def test_unknown_fields_and_wrong_enums_are_refused() -> None:
    with FakeBitbucket() as fake, _client() as http:
        r = http.post(fake.url + PR + "/comments", json={"text": "x", "colour": "red"})
        assert r.status_code == 400 and "colour" in r.json()["errors"][0]["message"]
        anchor = {"path": "a.py", "line": 1, "lineType": "NEW", "fileType": "TO"}
        assert http.post(fake.url + PR + "/comments", json={"text": "x", "anchor": anchor}).status_code == 400
        assert len(fake.violations) == 2


def test_undeclared_query_parameters_and_routes_are_refused() -> None:
    with FakeBitbucket() as fake, _client() as http:
        assert http.get(fake.url + PR + "/activities", params={"page": 2}).status_code == 400
        assert http.get(fake.url + PR + "/reviews").status_code == 404
        assert len(fake.violations) == 2


def test_a_report_result_must_match_the_whole_pattern() -> None:
    with FakeBitbucket() as fake, _client() as http:
        url = fake.url + "/rest/insights/1.0/projects/PRJ/repos/widgets/commits/abc/reports/k"
        assert http.put(url, json={"title": "t", "data": [], "result": "PASSED"}).status_code == 400
        assert http.put(url, json={"title": "t", "data": [], "result": "PASS"}).status_code == 200
        assert http.post(url + "/annotations", json={"annotations": [{"message": "m"}]}).status_code == 400


def test_a_stale_comment_version_is_409() -> None:
    with FakeBitbucket() as fake, _client() as http:
        c = http.post(fake.url + PR + "/comments", json={"text": "x"}).json()
        assert (
            http.put(fake.url + PR + f"/comments/{c['id']}", json={"text": "y", "version": 0}).status_code
            == 200
        )
        assert (
            http.put(fake.url + PR + f"/comments/{c['id']}", json={"text": "z", "version": 0}).status_code
            == 409
        )
        assert fake.violations == []


def test_the_users_permission_filter_is_checked_as_the_spec_describes_it() -> None:
    with FakeBitbucket(writers=("maintainer",)) as fake, _client() as http:
        url = fake.url + "/rest/api/1.0/users"
        rights = {
            "permission.1": "REPO_WRITE",
            "permission.1.projectKey": "PRJ",
            "permission.1.repositorySlug": "widgets",
        }
        fake.user("maintainers-friend")
        found = http.get(url, params={"filter": "maintainer", **rights})
        assert found.status_code == 200 and [u["slug"] for u in found.json()["values"]] == ["maintainer"]
        assert http.get(url, params={"filter": "maintainer", "limit": 5, **rights}).status_code == 400
        assert http.get(url, params={"filter": "x", "permission.1": "REPO_WRITE"}).status_code == 400
        assert http.get(url, params={"permission.1.colour": "red"}).status_code == 400
        assert len(fake.violations) == 2  # `limit` and `permission.1.colour` are not in the spec
