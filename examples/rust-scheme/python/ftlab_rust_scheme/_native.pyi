"""The compiled module of the template scheme (src/lib.rs)."""

#: The address of the scheme's ABI table, for `ftlab.register_native_scheme`.
SCHEME_API: int
