-- A square layer's weight read transposed: both axes may have 768 entries, but E is not R.
-- error: E330 at 3:36
fn layer(x : B×E, w : E×R) : B×R ↦ einsum("be,re->br", x, w)
