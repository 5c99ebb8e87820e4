"""A minimal GitHub GraphQL endpoint for the emulated API: review threads of the one PR, and the
`resolveReviewThread` mutation.

Every document is validated against an excerpt of GitHub's public schema (tests/data/github_graphql/,
from octokit/graphql-schema): an unknown field, a wrong argument or input type is answered as GitHub
answers it (HTTP 200 with `errors`, nothing executed) and recorded in the fake's `schema_errors`.
Threads are derived from the fake's review comments: one thread per top-level comment, its replies
inside it; thread ids are opaque node ids (`PRRT_…`), as on GitHub.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from graphql import build_schema, graphql_sync, parse, validate
from graphql.error import GraphQLError

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "github_graphql" / "schema-excerpt.graphql"
SCHEMA = build_schema(SCHEMA_PATH.read_text())


def thread_id(root_comment_id: int) -> str:
    return "PRRT_" + base64.b64encode(f"0:PullRequestReviewThread{root_comment_id}".encode()).decode()


def handle(fake: Any, body: Any) -> tuple[int, dict[str, str], Any]:
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return 400, {}, {"message": "Problems parsing JSON"}
    try:
        document = parse(body["query"])
    except GraphQLError as exc:
        fake.schema_errors.append(f"POST /graphql: {exc.message}")
        return 200, {}, {"errors": [{"message": exc.message}]}
    errors = validate(SCHEMA, document)
    if errors:
        fake.schema_errors += [f"POST /graphql: {e.message}" for e in errors]
        return 200, {}, {"errors": [{"message": e.message} for e in errors]}
    result = graphql_sync(
        SCHEMA, body["query"], root_value=_Root(fake), variable_values=body.get("variables")
    )
    out: dict[str, Any] = {"data": result.data}
    if result.errors:
        out["errors"] = [{"message": e.message, "type": "NOT_FOUND"} for e in result.errors]
    return 200, {}, out


class _Root:
    def __init__(self, fake: Any) -> None:
        self.fake = fake

    def _threads(self) -> list[dict[str, Any]]:
        comments = self.fake.comments

        def thread_comments(root: int) -> Any:
            def resolve(info: Any, first: int | None = None, **_: Any) -> dict[str, Any]:
                nodes = [
                    {"databaseId": x["id"], "body": x["body"]}
                    for x in comments
                    if x["id"] == root or x.get("in_reply_to_id") == root
                ]
                return {"nodes": nodes[:first] if first else nodes}

            return resolve

        return [
            {
                "id": thread_id(c["id"]),
                "isResolved": c["id"] in self.fake.resolved_threads,
                "path": c["path"],
                "line": c.get("line"),
                "comments": thread_comments(c["id"]),
            }
            for c in comments
            if c.get("in_reply_to_id") is None
        ]

    def repository(self, info: Any, owner: str, name: str, **_: Any) -> dict[str, Any] | None:
        if f"{owner}/{name}".lower() != self.fake.repo.lower():
            raise GraphQLError(f"Could not resolve to a Repository with the name '{owner}/{name}'.")

        def pull(info: Any, number: int) -> dict[str, Any] | None:
            if number != self.fake.pr_number:
                raise GraphQLError(f"Could not resolve to a PullRequest with the number of {number}.")
            return {"reviewThreads": self._page}

        return {"pullRequest": pull}

    def _page(
        self, info: Any, first: int | None = None, after: str | None = None, **_: Any
    ) -> dict[str, Any]:
        threads = self._threads()
        start = int(after) if after else 0
        size = min(first or 100, 100)
        page = threads[start : start + size]
        more = start + size < len(threads)
        return {
            "nodes": page,
            "pageInfo": {"hasNextPage": more, "endCursor": str(start + size) if more else None},
        }

    def resolveReviewThread(self, info: Any, input: dict[str, Any]) -> dict[str, Any]:  # noqa: N802, A002
        if self.fake.read_only or self.fake.read_only_graphql:
            raise GraphQLError("Resource not accessible by integration")
        for t in self._threads():
            if t["id"] == input["threadId"]:
                root = int(base64.b64decode(t["id"][5:]).decode().rsplit("Thread", 1)[1])
                self.fake.resolved_threads.add(root)
                return {
                    "thread": {**t, "isResolved": True},
                    "clientMutationId": input.get("clientMutationId"),
                }
        raise GraphQLError(f"Could not resolve to a node with the global id of '{input['threadId']}'")
