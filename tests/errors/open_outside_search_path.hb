-- Escape.hb is a symbolic link to a file outside the search path (made by the test, since
-- `..` cannot even be spelled in an open).
-- link: Escape.hb -> outside/Secret.hb
-- error: E204 at 5:1
open Escape
fn f(x) ↦ secret(x)
