-- An axis has one size in a call: E has 3 entries in x but 4 in w.
-- error: E331 at 4:23
-- call: layer ones:2x3 ones:4x5
fn layer(x : B×E, w : E×R) : B×R ↦ einsum("be,er->br", x, w)
