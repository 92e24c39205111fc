"""Words and operators of other languages, which .hb does not have: a syntax error at one of
them, an unknown name that is one, or a value's attribute (`x.sum()`, `x.T`) says what to
write instead."""

#: Constructs of other languages that .hb does not have, by the word that starts them, and
#: what to write instead. A syntax error at (or just after) one of these words says so.
FOREIGN_WORDS = {
    "case": "choose with match x { when 1 ↦ a  when 2 | 3 ↦ b  other ↦ c }, or if … then … "
            "else …",
    "switch": "choose with match x { when 1 ↦ a  when 2 | 3 ↦ b  other ↦ c }, or if … then … "
              "else …",
    "elif": "write else if … then … else …",
    "for": "a loop is a definition that calls itself in tail position, as "
           "def count(t, x) ≔ if t = 0 then x else count(t − 1, x + 1)",
    "while": "a loop is a definition that calls itself in tail position, as "
             "def halve(x) ≔ if x < 1 then x else halve(x / 2)",
    "lambda": "give the function a name with def, and pass its inputs as arguments",
    "import": "write open Module (open Prelude.Networks, or open Folder.File for a file)",
    "class": "a trainable model is model Name(…) : Learner { … }; other definitions stand alone",
    "return": "a definition's body is its value: def f(x) ≔ x + 1",
    "var": "name a value with def: def name ≔ expression",
    "val": "name a value with def: def name ≔ expression",
    "const": "name a value with def: def name ≔ expression",
    "and": "comparisons give 1 or 0, so multiply them: (a > 0) · (b > 0)",
    "or": "comparisons give 1 or 0, so take their max: max(a > 0, b > 0)",
    "not": "comparisons give 1 or 0, so subtract from 1: 1 − (a > 0)",
    # the original Hilbert's other dialects: its logic theories (.hs) and its processes
    "theory": "theories and their queries belong to the original Hilbert's logic files (.hs), "
              "which hilbert does not read; state an identity as a law, law name = lhs = rhs, "
              "in a module or in model Name { law … }",
    "query": "queries belong to the original Hilbert's logic theories (.hs), which hilbert "
             "does not read; a .hb file declares fn, def, model and law",
    "process": "a process is not part of hilbert's .hb; a step repeated over time is a "
               "definition that calls itself in tail position, or a model's def step(…) { … }",
}

#: Other languages' operators that .hb spells otherwise, by their characters, and what to
#: write instead. A syntax error at one of them says so.
FOREIGN_OPERATORS = {
    "@": 'a matrix product is an einsum, as einsum("ij,jk->ik", x, w) (or mul(x, w), from '
         "Prelude.LinearAlgebra)",
    "**": "a power is x ^ 2 (or x² for a square)",
}

#: What .hb writes for a value's attribute or method in other languages (`x.sum()`, `x.T`):
#: .hb values have neither, so `x.name` reads as a name of a module x.
ATTRIBUTES = {
    "sum": 'sum its entries with einsum, one letter per axis: einsum("ij->", {x}) for every '
           'entry of a matrix, einsum("ij->j", {x}) down its columns',
    "T": 'transpose it with einsum: einsum("ij->ji", {x}) (or transpose({x}), from '
         "Prelude.LinearAlgebra)",
    "dot": 'write a product with einsum: einsum("ij,jk->ik", {x}, w)',
    "mean": 'divide a sum by a count: einsum("ij->", {x}) / (rows({x}) · columns({x})) (or '
            "mean({x}) of a vector, from Prelude.Statistics)",
    "max": "take the largest along an axis with maximum({x}, 0), or of two values with max(a, b)",
    "min": "take the smallest along an axis with minimum({x}, 0), or of two values with min(a, b)",
    "shape": "rows({x}) and columns({x}) are the sizes of its first two axes",
}
ATTRIBUTES |= {"transpose": ATTRIBUTES["T"], "matmul": ATTRIBUTES["dot"],
               "size": ATTRIBUTES["shape"]}

#: Names of Python libraries a newcomer may reach for, which .hb has no module of.
PYTHON_MODULES = frozenset(("np", "numpy", "torch", "jnp", "jax", "math", "tf", "scipy"))
