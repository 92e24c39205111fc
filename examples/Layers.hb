open Prelude.Networks

fn layerThrough(a, w) ↦ dense(a, w)
fn normalisedRows(a) ↦ layerNorm(a)
fn attend(q, k, v, d) ↦ attentionOf(q, k, v, d)
fn attendCausally(q, k, v, d) ↦ causalAttention(q, k, v, d)
fn kept(a, u, p) ↦ dropped(a, u, p)
fn filtered(x, k) ↦ convolve(x, k)
fn pooledMax(x, k) ↦ maxPool(x, k)
