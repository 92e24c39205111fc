"""Words that start a construct of another language, which .hb does not have: a syntax error at
one of them, or an unknown name that is one, says what to write instead."""

#: Constructs of other languages that .hb does not have, by the word that starts them, and
#: what to write instead. A syntax error at (or just after) one of these words says so.
FOREIGN_WORDS = {
    "match": "choose with if … then … else …",
    "case": "choose with if … then … else …",
    "switch": "choose with if … then … else …",
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
}
