-- Transformer: one pre-norm transformer block that predicts the next token, trained with Adam
--
-- Tokens (class numbers 0 … vocab − 1, a batch B×T) are embedded, go through one block, and
-- are read out as logits over the vocabulary:
--   h = x + causal multi-head attention(layer norm(x)),   out = h + MLP(layer norm(h)),
-- the MLP width → hidden → width with GELU (erf, as torch.nn.GELU()). The loss is the mean
-- cross-entropy of each position's logits against the token that follows it. One call of
-- train is one Adam step on all fifteen parameters, their gradients taken by ∂ in one
-- reverse sweep. benchmarks/first_results.py times the first train call beside torch and JAX.
--
-- Conventions. Weights are d_in×d_out; the attention weights are per head (heads × width × key,
-- the output projection heads × key × width). Adam's moments are the model's state, one m and
-- one v per weight (`state m, v like weights`, starting at zero: m.emb, v.emb, …), and so is
-- the count of steps taken; the train block updates all fifteen weights in one line.

open Prelude.Losses
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
  state taken : Tensor[]                from 0
  state m, v like weights from 0

  -- train(tok, next) · tok token numbers B×T · next the token after each, B×T
  -- One Adam step (learning rate 1e-3, β 0.9 and 0.999, ε 1e-8) on the gradient of the loss, for every weight.
  def train(tok, next) {
    (weights, m, v) ≔ adam(weights, m, v, ∂ loss(tok, next) / ∂ weights, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    taken ≔ taken + 1
  }

  -- trainMasked(tok, next, mask) · as train · mask 0/1 B×T, 1 where the next token counts
  -- One Adam step (as train's) on the loss over the positions whose mask is 1: a copy task
  -- scores only the tokens that can be predicted (examples/copy_task.py).
  def trainMasked(tok, next, mask) {
    (weights, m, v) ≔ adam(weights, m, v, ∂ maskedLoss(tok, next, mask) / ∂ weights, taken + 1, 1e-3, 0.9, 0.999, 1e-8)
    taken ≔ taken + 1
  }

  -- maskedLoss(tok, next, mask) · as trainMasked → scalar
  -- The mean cross-entropy over the positions whose mask is 1 (Prelude.Losses).
  def maskedLoss(tok, next, mask) ≔ maskedCrossEntropy(logits(tok), next, mask)

  -- predicted(tok, next, mask) · as trainMasked → share of those positions whose largest logit is the next token
  def predicted(tok, next, mask) ≔ maskedAccuracy(logits(tok), next, mask)

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
