"""`python -m bot.cli.ci_smoke [NAME]`: load the model with llama.cpp and generate a few tokens.

The image's and CI's smoke test: `prereview --version` passes in an image whose llama.cpp cannot even be
loaded (a runtime stage without libgomp1), so this loads the backends and the model's weights and asks
for a reply. One line `prereview-smoke: NAME generated N tokens in S s` and exit 0; a one-line error and
exit 2 otherwise. The model must be in the cache (the image's baked one) or installed: nothing is
downloaded.
"""

from __future__ import annotations

import sys

from ..models import catalog
from ..models.base import Message
from ..types import PrereviewError


def smoke(name: str) -> str:
    name = name or catalog.DEFAULT_MODEL
    from ..models.llama_cpp import LlamaCppModel

    model = LlamaCppModel(catalog.resolve(name), name=name, n_ctx=512)
    reply = model.complete([Message("user", "Say OK.")], max_tokens=4)
    if reply.completion_tokens < 1:
        raise PrereviewError(f"{name} loaded but generated nothing")
    return f"{name} generated {reply.completion_tokens} tokens in {reply.seconds:.1f} s"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    try:
        print(f"prereview-smoke: {smoke(args[0] if args else '')}")
    except (PrereviewError, ImportError, OSError) as exc:  # ImportError/OSError: a library llama.cpp needs
        print(f"prereview-smoke: error: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
