-- dense takes two arguments.
-- error: E201 at 4:18
def dense(a, w) ≔ einsum("np,pq->nq", a, w)
fn layer(a, w) ↦ dense(a)
