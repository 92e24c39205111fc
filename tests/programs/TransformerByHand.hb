-- Transformer by hand: examples/Transformer.hb with Adam written out weight by weight, as a
-- model had to be before `state m, v like weights` and group assignments. The weights, the
-- state and their order are the example's, so tests/test_groups.py can check that both
-- forms compile to the same plan and the same generated code, and train alike.

open Prelude.Norms
open Prelude.Optimisers
open Prelude.Sequences


-- Block(vocab, width, heads, key, hidden, seed) · sizes of the vocabulary, the model, each head's keys, the MLP · seed of the initial draws
-- One pre-norm block with its embedding and read-out; weights drawn uniformly from ±1/√(fan in), gains 1, shifts 0.
model Block(vocab, width, heads, key, hidden, seed) : Learner {
  weight emb : Tensor[vocab, width]      from drawn(uniform(seed), width)
  weight g1 : Tensor[width]              from 1
  weight s1 : Tensor[width]              from 0
  weight wq : Tensor[heads, width, key]  from drawn(uniform(seed), width)
  weight wk : Tensor[heads, width, key]  from drawn(uniform(seed), width)
  weight wv : Tensor[heads, width, key]  from drawn(uniform(seed), width)
  weight wo : Tensor[heads, key, width]  from drawn(uniform(seed), width)
  weight g2 : Tensor[width]              from 1
  weight s2 : Tensor[width]              from 0
  weight w1 : Tensor[width, hidden]      from drawn(uniform(seed), width)
  weight c1 : Tensor[hidden]             from drawn(uniform(seed), width)
  weight w2 : Tensor[hidden, width]      from drawn(uniform(seed), hidden)
  weight c2 : Tensor[width]              from drawn(uniform(seed), hidden)
  weight out : Tensor[width, vocab]      from drawn(uniform(seed), width)
  weight d : Tensor[vocab]               from drawn(uniform(seed), width)
  weight taken : Tensor[]                from 0
  weight memb : Tensor[vocab, width]     from 0
  weight mg1 : Tensor[width]             from 0
  weight ms1 : Tensor[width]             from 0
  weight mwq : Tensor[heads, width, key] from 0
  weight mwk : Tensor[heads, width, key] from 0
  weight mwv : Tensor[heads, width, key] from 0
  weight mwo : Tensor[heads, key, width] from 0
  weight mg2 : Tensor[width]             from 0
  weight ms2 : Tensor[width]             from 0
  weight mw1 : Tensor[width, hidden]     from 0
  weight mc1 : Tensor[hidden]            from 0
  weight mw2 : Tensor[hidden, width]     from 0
  weight mc2 : Tensor[width]             from 0
  weight mout : Tensor[width, vocab]     from 0
  weight md : Tensor[vocab]              from 0
  weight vemb : Tensor[vocab, width]     from 0
  weight vg1 : Tensor[width]             from 0
  weight vs1 : Tensor[width]             from 0
  weight vwq : Tensor[heads, width, key] from 0
  weight vwk : Tensor[heads, width, key] from 0
  weight vwv : Tensor[heads, width, key] from 0
  weight vwo : Tensor[heads, key, width] from 0
  weight vg2 : Tensor[width]             from 0
  weight vs2 : Tensor[width]             from 0
  weight vw1 : Tensor[width, hidden]     from 0
  weight vc1 : Tensor[hidden]            from 0
  weight vw2 : Tensor[hidden, width]     from 0
  weight vc2 : Tensor[width]             from 0
  weight vout : Tensor[width, vocab]     from 0
  weight vd : Tensor[vocab]              from 0

  -- train(tok, next) · tok token numbers B×T · next the token after each, B×T
  -- One Adam step (learning rate 1e-3, β 0.9 and 0.999, ε 1e-8) on the gradient of the loss.
  def train(tok, next) {
    (emb, memb, vemb) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(emb, memb, vemb, a1, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (g1, mg1, vg1) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(g1, mg1, vg1, a2, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (s1, ms1, vs1) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(s1, ms1, vs1, a3, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (wq, mwq, vwq) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(wq, mwq, vwq, a4, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (wk, mwk, vwk) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(wk, mwk, vwk, a5, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (wv, mwv, vwv) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(wv, mwv, vwv, a6, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (wo, mwo, vwo) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(wo, mwo, vwo, a7, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (g2, mg2, vg2) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(g2, mg2, vg2, a8, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (s2, ms2, vs2) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(s2, ms2, vs2, a9, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (w1, mw1, vw1) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(w1, mw1, vw1, a10, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (c1, mc1, vc1) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(c1, mc1, vc1, a11, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (w2, mw2, vw2) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(w2, mw2, vw2, a12, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (c2, mc2, vc2) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(c2, mc2, vc2, a13, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (out, mout, vout) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(out, mout, vout, a14, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    (d, md, vd) ≔ let (a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) ≔ gradients(tok, next) in adam(d, md, vd, a15, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    taken ≔ taken + 1
  }

  -- logits(tok) · tok token numbers B×T → B×T×vocab
  -- The forward pass: embedding, the block, the read-out.
  def logits(tok) ≔ readOut(block(embedded(tok, emb), g1, s1, wq, wk, wv, wo, g2, s2, w1, c1, w2, c2), out, d)

  -- loss(tok, next) · as train → scalar
  -- The mean cross-entropy of every position's logits against the next token.
  def loss(tok, next) ≔ sequenceCrossEntropy(logits(tok), next)

  -- gradients(tok, next) · as train → the fifteen gradients, shaped as emb, g1, s1, wq, wk, wv, wo, g2, s2, w1, c1, w2, c2, out, d
  -- ∂ loss with respect to every parameter, in one reverse sweep.
  def gradients(tok, next) ≔ grad(loss(tok, next), (emb, g1, s1, wq, wk, wv, wo, g2, s2, w1, c1, w2, c2, out, d))
}

-- Building blocks

-- block(x, g1, s1, wq, wk, wv, wo, g2, s2, w1, c1, w2, c2) · x B×T×width · the block's weights → B×T×width
-- Pre-norm: attention on the normalised sequence added to it, then the MLP on the normalised result added to that.
def block(x, g1, s1, wq, wk, wv, wo, g2, s2, w1, c1, w2, c2) ≔
  let h ≔ x + causalMultiHead(layerNormSeq(x, g1, s1), wq, wk, wv, wo)
  in h + dense(gelu(dense(layerNormSeq(h, g2, s2), w1, c1)), w2, c2)

-- dense(x, w, c) · x B×T×m · w m×h · c vector h → B×T×h
-- Every position through one layer, x W + c.
def dense(x, w, c) ≔ let z ≔ einsum("btm,mh->bth", x, w) in z + einsum("bth,h->bth", z ^ 0, c)

-- embedded(tok, emb) · tok token numbers B×T · emb vocab×width → B×T×width
-- Each token's row of the embedding (its one-hot row times emb; built by comparison, so ∂ never meets a label).
def embedded(tok, emb) ≔ einsum("btv,vm->btm", marked(tok, positions(emb, 0)), emb)

-- readOut(x, out, d) · x B×T×width · out width×vocab · d vector vocab → logits B×T×vocab
def readOut(x, out, d) ≔ dense(x, out, d)

-- marked(tok, classes) · tok B×T · classes the class numbers, a vector → B×T×classes, 1 where the class is the token
def marked(tok, classes) ≔ einsum("bt,v->btv", tok, classes ^ 0) = einsum("bt,v->btv", tok ^ 0, classes)

-- sequenceCrossEntropy(z, next) · z logits B×T×V · next token numbers B×T → scalar
-- −(1/BT) Σ log softmax(z)[b, t, next[b, t]], the softmax over V shifted by each position's maximum.
def sequenceCrossEntropy(z, next) ≔
  let s ≔ z − alongLast(z, maximum(z, 2)),
      logp ≔ s − alongLast(z, ln(einsum("btv->bt", exp(s))))
  in 0 − einsum("btv,btv->", marked(next, positions(z, 2)), logp) / (rows(z) · rows(z[0]))
