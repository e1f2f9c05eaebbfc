"""The template Rust scheme `rustpage`, registered with an installed ftlab."""

from __future__ import annotations

import ftlab
from ftlab_rust_scheme import _native


def register() -> str:
    """Registers the scheme with ftlab (the `ftlab.schemes` entry point calls it)."""
    return ftlab.register_native_scheme(_native.SCHEME_API)
