-- A misspelt definition.
-- error: E200 at 4:18
def dense(a, w) ≔ einsum("np,pq->nq", a, w)
fn layer(a, w) ↦ dnese(a, w)
