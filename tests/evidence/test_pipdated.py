"""The date-bounded install leaves out the package sources that have no upload times (pipdated.py)."""

from __future__ import annotations

import os

from bot.evidence import pipdated

LISTING = """\
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.extra-index-url='file:///opt/pypi/simple https://mirror.example/simple'
global.find-links='/opt/wheels'
global.timeout='60'
:env:.find-links='/opt/wheels /tmp/more'
:env:.index-url='https://pypi.example/simple'
"""


def test_local_sources_are_left_out_and_every_other_setting_kept() -> None:
    env, dropped = pipdated.without_local(LISTING) or ({}, [])
    assert env == {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt",
        "PIP_EXTRA_INDEX_URL": "https://mirror.example/simple",
        "PIP_FIND_LINKS": None,  # the environment's own value (the last listed) is unset, not kept
        "PIP_TIMEOUT": "60",
        "PIP_INDEX_URL": "https://pypi.example/simple",
    }
    assert dropped == ["file:///opt/pypi/simple", "/opt/wheels", "/tmp/more"]


def test_a_configuration_without_local_sources_is_left_as_it_is() -> None:
    assert pipdated.without_local("global.index-url='https://pypi.org/simple'\nglobal.timeout='5'\n") is None
    assert pipdated.without_local("") is None
    assert pipdated.is_local("FILE:///x") and pipdated.is_local("../wheels")
    assert not pipdated.is_local("HTTPS://pypi.org/simple")
