-- Sequences
--
-- Recurrent cells and attention with named shapes, after the papers (seed 003): the LSTM as
-- PyTorch computes it (Hochreiter and Schmidhuber 1997, with the forget gate of Gers et al.),
-- Graves' LSTM with diagonal peepholes (2013), the GRU both as Cho et al. wrote it (2014,
-- reset before the recurrent product) and as PyTorch computes it (reset after), and scaled
-- dot-product attention with several heads and a causal mask (Vaswani et al. 2017). A
-- sequence is a loop over time that reads x[t], so its cost grows linearly with its length.
--
-- Named axes (docs/language.md, "Named axes"), in the seed's names: B the batch, T time (or
-- query positions), E inputs, D the state, R the destination of the affine family x Wᵃ +
-- h Uᵃ + bᵃ (|R| = |D| but R ≠ D: each cell renames R to D explicitly, `rename(…, R → D)`,
-- where the seed does), G the gates (a ∈ {i, f, g, o} for the LSTM, {r, z, n} for the GRU; the
-- seed indexes them and does not name the axis), P the three peepholes, T′ key positions, M
-- model width, M′ the output projection's destination, F key width, L value width, N heads.
-- Every definition declares its parameters' axes and its result's (an LSTM's pair of state
-- and memory as `: (B×D, B×D)`), so a transposed weight or keys contracted with queries are refused when the module
-- loads; a declared axis takes the axis of the argument given for it at each call.
--
-- Conventions. A recurrent input x is T×B×E: time first, then the batch, then features, so
-- x[t] is the B×E slice at step t; states h and c are B×D. The gate axis is last: an LSTM's
-- input weights wx are E×R×G with the gates in PyTorch's order i, f, g, o (wx[e, d, k] is
-- PyTorch's weight_ih[k·D + d, e]); its recurrent weights wh are D×R×G and its bias b is R×G
-- (PyTorch's b_ih + b_hh). A GRU's gates are r, z, n in that order, with weights E×R×G and
-- D×R×G. Inside, the steps keep the gate axis in the middle (input products T×B×G×R,
-- recurrent weights D×G×R, biases G×R: `middle` transposes them once, before the walk), so
-- each gate of a step's product is a contiguous B×D slab its nest reads in place. Attention
-- reads x as B×T×M, batch first, its keys and values at positions named T′ (self-attention
-- renames x's T to T′); a head's weights map the model width M to key width F or value width
-- L, and several heads stack their weights on a leading axis of N.
-- The models at the end hold the weights (`parameters()` counts them).
--
-- The LSTMs' definitions give a pair (state, memory): their results are not declared.

open Prelude.Arithmetic


-- The LSTM

-- lstmCell(x, h, c, wx, wh, b) · x inputs B×E · h state B×D · c memory B×D · wx E×R×G · wh D×R×G · b R×G → (next state B×D, next memory B×D)
-- One step: gates from x wx + h wh + b; c' = σ(f) c + σ(i) tanh(g) and h' = σ(o) tanh(c').
def lstmCell(x : B×E, h : B×D, c : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : (B×D, B×D) ≔ lstmFrom(einsum("be,edg->bgd", x, wx), h, c, middle(wh), einsum("dg->gd", b))

-- lstm(x, h, c, wx, wh, b) · x sequence T×B×E · h starting state B×D · c starting memory B×D · weights as lstmCell → (last state B×D, last memory B×D)
-- The cell walked over the sequence, t = 0 … T − 1. Every step's input product x[t] wx is one matrix product over the whole sequence, made before the walk; each step then multiplies only h wh.
def lstm(x : T×B×E, h : B×D, c : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : (B×D, B×D) ≔ lstmSteps(rows(x), inputsOf(x, wx), h, c, middle(wh), einsum("dg->gd", b))

-- peepholeCell(x, h, c, wx, wh, b, p) · as lstmCell · p peepholes D×P (for i, f, o) → (next state B×D, next memory B×D)
-- Graves' cell: the input and forget gates also read c, the output gate reads c', each through a diagonal peephole (D numbers, not D²).
def peepholeCell(x : B×E, h : B×D, c : B×D, wx : E×R×G, wh : D×R×G, b : R×G, p : D×P) : (B×D, B×D) ≔
  let z ≔ affine(x, h, wx, wh, b),
      c2 ≔ sigmoid(gate(z, 1) + peep(c, p, 1)) · c + sigmoid(gate(z, 0) + peep(c, p, 0)) · tanh(gate(z, 2))
  in (sigmoid(gate(z, 3) + peep(c2, p, 2)) · tanh(c2), c2)

-- peepholeLstm(x, h, c, wx, wh, b, p) · x sequence T×B×E · others as peepholeCell → (last state, last memory)
-- The peephole cell walked over the sequence.
def peepholeLstm(x : T×B×E, h : B×D, c : B×D, wx : E×R×G, wh : D×R×G, b : R×G, p : D×P) : (B×D, B×D) ≔ peepholeSteps(rows(x), x, h, c, wx, wh, b, p)

-- Building blocks

-- affine(x, h, wx, wh, b) · x B×E · h B×D · wx E×R×G · wh D×R×G · b R×G → B×D×G
-- Every gate's pre-activation at once, x wx + h wh + b, the gate axis last (two matrix products, no transposes), its R renamed to D.
def affine(x : B×E, h : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : B×D×G ≔ rename(einsum("be,edg->bdg", x, wx) + einsum("bk,kdg->bdg", h, wh) + biasOf(h, b), R → D)

-- biasOf(h, b) · h B×D (only its shape is read) · b R×G → B×R×G
-- The bias repeated down the batch (h's ones, B×D, read as B×R: only B is used).
def biasOf(h : B×D, b : R×G) : B×R×G ≔ einsum("bd,dg->bdg", rename(h ^ 0, D → R), b)

-- gate(z, k) · z B×D×G · k gate number scalar → B×D
-- Gate k of z, z[:, :, k], read through the mask [g = k] (the compiler reads the slice directly).
def gate(z : B×D×G, k : Scalar) : B×D ≔ einsum("bdg,g->bd", z, positions(z, 2) = k)

-- peep(c, p, k) · c memory B×D · p peepholes D×P · k number scalar → B×D
-- The memory through peephole k, c ⊙ p[:, k] on every row.
def peep(c : B×D, p : D×P, k : Scalar) : B×D ≔ einsum("bd,dg,g->bd", c, p, positions(p, 1) = k)

-- inputsOf(x, wx) · x sequence T×B×E · wx E×R×G → T×B×G×R
-- Every step's input product x[t] wx, as one contraction over the whole sequence, the gate axis in the middle.
def inputsOf(x : T×B×E, wx : E×R×G) : T×B×G×R ≔ einsum("tbe,edg->tbgd", x, wx)

-- middle(w) · w recurrent weights D×R×G → D×G×R
-- The weights with the gate axis in the middle: a product with them gives each gate as a contiguous slab.
def middle(w : D×R×G) : D×G×R ≔ einsum("kdg->kgd", w)

-- slab(z, k) · z B×G×D · k gate number scalar → B×D
-- Gate k of z, z[:, k, :], read through the mask [g = k] (the compiler reads the slab in place).
def slab(z : B×G×D, k : Scalar) : B×D ≔ einsum("bgd,g->bd", z, positions(z, 1) = k)

-- biasAlong(z, b) · z B×G×R (only its shape is read) · b G×R → B×G×R
-- The bias repeated down the batch.
def biasAlong(z : B×G×R, b : G×R) : B×G×R ≔ einsum("bgd,gd->bgd", z ^ 0, b)

-- lstmSteps(n, a, h, c, wh, b) · n steps left · a input products T×B×G×R (from inputsOf) · h B×D · c B×D · wh D×G×R (from middle) · b G×R → (state, memory)
-- Steps the cell n more times, reading a[T − n] next.
def lstmSteps(n : Scalar, a : T×B×G×R, h : B×D, c : B×D, wh : D×G×R, b : G×R) : (B×D, B×D) ≔
  if n = 0 then (h, c)
  else let (h2, c2) ≔ lstmFrom(a[rows(a) − n], h, c, wh, b) in lstmSteps(n − 1, a, h2, c2, wh, b)

-- lstmFrom(a, h, c, wh, b) · a input product B×G×R · h B×D · c B×D · wh D×G×R · b G×R → (next state, next memory)
-- One step of the cell from its input product, the gate axis in the middle, R renamed to D.
def lstmFrom(a : B×G×R, h : B×D, c : B×D, wh : D×G×R, b : G×R) : (B×D, B×D) ≔
  let z ≔ rename(a + einsum("bk,kgd->bgd", h, wh) + biasAlong(a, b), R → D),
      c2 ≔ sigmoid(slab(z, 1)) · c + sigmoid(slab(z, 0)) · tanh(slab(z, 2))
  in (sigmoid(slab(z, 3)) · tanh(c2), c2)

-- peepholeSteps(n, x, h, c, wx, wh, b, p) · n steps left · others as peepholeLstm → (state, memory)
-- Steps the peephole cell n more times.
def peepholeSteps(n : Scalar, x : T×B×E, h : B×D, c : B×D, wx : E×R×G, wh : D×R×G, b : R×G, p : D×P) : (B×D, B×D) ≔
  if n = 0 then (h, c)
  else let (h2, c2) ≔ peepholeCell(x[rows(x) − n], h, c, wx, wh, b, p) in peepholeSteps(n − 1, x, h2, c2, wx, wh, b, p)


-- The GRU

-- gruCell(x, h, wx, wh, bx, bh) · x inputs B×E · h state B×D · wx E×R×G · wh D×R×G · bx R×G · bh R×G → next state B×D
-- PyTorch's GRU, reset after the recurrent product: r, z = σ(…), n = tanh(x Wn + bxn + r ⊙ (h Un + bhn)), h' = (1 − z) n + z h.
def gruCell(x : B×E, h : B×D, wx : E×R×G, wh : D×R×G, bx : R×G, bh : R×G) : B×D ≔ gruFrom(einsum("be,edg->bgd", x, wx), h, middle(wh), einsum("dg->gd", bx), einsum("dg->gd", bh))

-- gru(x, h, wx, wh, bx, bh) · x sequence T×B×E · h starting state B×D · weights as gruCell → last state B×D
-- PyTorch's GRU cell walked over the sequence. As in lstm, every step's input product is one matrix product over the whole sequence, made before the walk.
def gru(x : T×B×E, h : B×D, wx : E×R×G, wh : D×R×G, bx : R×G, bh : R×G) : B×D ≔ gruSteps(rows(x), inputsOf(x, wx), h, middle(wh), einsum("dg->gd", bx), einsum("dg->gd", bh))

-- choCell(x, h, wx, wh, b) · x inputs B×E · h state B×D · wx E×R×G · wh D×R×G · b R×G → next state B×D
-- Cho et al.'s GRU, reset before the recurrent product: n = tanh(x Wn + (r ⊙ h) Un + bn), h' = z h + (1 − z) n.
def choCell(x : B×E, h : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : B×D ≔
  let a ≔ einsum("be,edg->bdg", x, wx) + biasOf(h, b),
      r ≔ sigmoid(rename(gate(a, 0) + einsum("bk,kd->bd", h, layer(wh, 0)), R → D)),
      z ≔ sigmoid(rename(gate(a, 1) + einsum("bk,kd->bd", h, layer(wh, 1)), R → D)),
      n ≔ tanh(rename(gate(a, 2) + einsum("bk,kd->bd", r · h, layer(wh, 2)), R → D))
  in z · h + (1 − z) · n

-- choGru(x, h, wx, wh, b) · x sequence T×B×E · h starting state B×D · weights as choCell → last state B×D
-- Cho's GRU walked over the sequence.
def choGru(x : T×B×E, h : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : B×D ≔ choSteps(rows(x), x, h, wx, wh, b)

-- Building blocks

-- layer(w, k) · w D×R×G · k gate number scalar → D×R
-- The weights of gate k, w[:, :, k].
def layer(w : D×R×G, k : Scalar) : D×R ≔ einsum("kdg,g->kd", w, positions(w, 2) = k)

-- gruSteps(n, a, h, wh, bx, bh) · n steps left · a input products T×B×G×R (from inputsOf) · h B×D · wh D×G×R (from middle) · bx G×R · bh G×R → state B×D
-- Steps PyTorch's GRU cell n more times, reading a[T − n] next.
def gruSteps(n : Scalar, a : T×B×G×R, h : B×D, wh : D×G×R, bx : G×R, bh : G×R) : B×D ≔
  if n = 0 then h
  else gruSteps(n − 1, a, gruFrom(a[rows(a) − n], h, wh, bx, bh), wh, bx, bh)

-- gruFrom(a, h, wh, bx, bh) · a input product B×G×R · h B×D · wh D×G×R · bx G×R · bh G×R → next state B×D
-- One step of PyTorch's GRU cell from its input product, the gate axis in the middle, R renamed to D.
def gruFrom(a : B×G×R, h : B×D, wh : D×G×R, bx : G×R, bh : G×R) : B×D ≔
  let ax ≔ rename(a + biasAlong(a, bx), R → D),
      u ≔ rename(einsum("bk,kgd->bgd", h, wh) + biasAlong(a, bh), R → D),
      r ≔ sigmoid(slab(ax, 0) + slab(u, 0)),
      z ≔ sigmoid(slab(ax, 1) + slab(u, 1)),
      n ≔ tanh(slab(ax, 2) + r · slab(u, 2))
  in (1 − z) · n + z · h

-- choSteps(n, x, h, wx, wh, b) · n steps left · others as choGru → state B×D
-- Steps Cho's cell n more times.
def choSteps(n : Scalar, x : T×B×E, h : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : B×D ≔
  if n = 0 then h
  else choSteps(n − 1, x, choCell(x[rows(x) − n], h, wx, wh, b), wx, wh, b)


-- Attention

-- attend(q, k, v) · q queries B×T×F · k keys B×T′×F · v values B×T′×L → B×T×L
-- Scaled dot-product attention, softmax_T′(q kᵀ / √F) v, the softmax over the keys T′.
def attend(q : B×T×F, k : B×T′×F, v : B×T′×L) : B×T×L ≔ einsum("bts,bsl->btl", softmaxLast(scores(q, k)), v)

-- causalAttend(q, k, v) · q B×T×F · k B×T′×F · v B×T′×L (as many keys as queries) → B×T×L
-- Attention in which position t reads only keys s ≤ t (every query has at least itself).
def causalAttend(q : B×T×F, k : B×T′×F, v : B×T′×L) : B×T×L ≔ einsum("bts,bsl->btl", softmaxLast(masked(scores(q, k))), v)

-- attention(x, wq, wk, wv) · x sequence B×T×M · wq M×F · wk M×F · wv M×L → B×T×L
-- One head of self-attention: queries, keys and values are three projections of x, the keys' and values' positions x's renamed T′.
def attention(x : B×T×M, wq : M×F, wk : M×F, wv : M×L) : B×T×L ≔
  let xs ≔ rename(x, T → T′) in attend(project(x, wq), project(xs, wk), project(xs, wv))

-- multiHead(x, wq, wk, wv, wo) · x sequence B×T×M · wq N×M×F · wk N×M×F · wv N×M×L · wo N×L×M′ → B×T×M′
-- N heads of self-attention side by side, each with its own F and L coordinates, joined by the output projection wo onto M′.
def multiHead(x : B×T×M, wq : N×M×F, wk : N×M×F, wv : N×M×L, wo : N×L×M′) : B×T×M′ ≔ einsum("bntl,nlo->bto", heads(x, wq, wk, wv, 0), wo)

-- causalMultiHead(x, wq, wk, wv, wo) · as multiHead → B×T×M′
-- multiHead with the causal mask in every head.
def causalMultiHead(x : B×T×M, wq : N×M×F, wk : N×M×F, wv : N×M×L, wo : N×L×M′) : B×T×M′ ≔ einsum("bntl,nlo->bto", heads(x, wq, wk, wv, 1), wo)

-- layerNormSeq(x, gain, shift) · x B×T×M · gain vector M · shift vector M → B×T×M
-- Layer normalisation of every position over the model width (population variance, 1e-5), then the gain and shift.
def layerNormSeq(x : B×T×M, gain : M, shift : M) : B×T×M ≔
  let centred ≔ x − alongLast(x, einsum("btm->bt", x) / columns(x[0])),
      spread ≔ sqrt(einsum("btm->bt", centred²) / columns(x[0]) + 1e-5)
  in einsum("btm,m->btm", centred / alongLast(x, spread), gain) + einsum("btm,m->btm", x ^ 0, shift)

-- Building blocks

-- project(x, w) · x B×T×M · w M×F → B×T×F
-- The sequence through one weight matrix.
def project(x : B×T×M, w : M×F) : B×T×F ≔ einsum("btm,mf->btf", x, w)

-- scores(q, k) · q B×T×F · k B×T′×F → B×T×T′
-- Every query against every key, q kᵀ / √F.
def scores(q : B×T×F, k : B×T′×F) : B×T×T′ ≔ einsum("btf,bsf->bts", q, k) / sqrt(columns(q[0]))

-- masked(s) · s scores B×T×T′ → B×T×T′
-- The scores with every key after its query lowered by 1e300, so its softmax weight is 0.
def masked(s : B×T×T′) : B×T×T′ ≔ s − 1e300 · (einsum("s,bts->bts", positions(s, 2), s ^ 0) > einsum("t,bts->bts", positions(s, 1), s ^ 0))

-- alongLast(x, v) · x B×T×M (only its shape is read) · v B×T → B×T×M
-- v repeated along the last axis.
def alongLast(x : B×T×M, v : B×T) : B×T×M ≔ einsum("bt,btm->btm", v, x ^ 0)

-- softmaxLast(s) · s B×T×T′ → B×T×T′
-- The softmax over the last axis, shifted by each line's maximum.
def softmaxLast(s : B×T×T′) : B×T×T′ ≔
  let e ≔ exp(s − einsum("bt,bts->bts", maximum(s, 2), s ^ 0))
  in e / einsum("bt,bts->bts", einsum("bts->bt", e), s ^ 0)

-- heads(x, wq, wk, wv, causal) · x B×T×M · wq N×M×F · wk N×M×F · wv N×M×L · causal 0 or 1 → B×N×T×L
-- Every head's attended values, the keys' and values' positions x's renamed T′.
def heads(x : B×T×M, wq : N×M×F, wk : N×M×F, wv : N×M×L, causal : Scalar) : B×N×T×L ≔
  let xs ≔ rename(x, T → T′),
      q ≔ einsum("btm,nmf->bntf", x, wq),
      k ≔ einsum("bsm,nmf->bnsf", xs, wk),
      v ≔ einsum("bsm,nml->bnsl", xs, wv),
      s ≔ einsum("bntf,bnsf->bnts", q, k) / sqrt(columns(wq[0])),
      m ≔ s − causal · 1e300 · (einsum("s,bnts->bnts", positions(s, 3), s ^ 0) > einsum("t,bnts->bnts", positions(s, 2), s ^ 0)),
      e ≔ exp(m − einsum("bnt,bnts->bnts", maximum(m, 3), m ^ 0))
  in einsum("bnts,bnsl->bntl", e / einsum("bnt,bnts->bnts", einsum("bnts->bnt", e), e ^ 0), v)


-- Models
--
-- The weights of each network above as a `model … : Learner`, drawn uniformly from
-- ±1/√(hidden width) (±1/√(model width) for attention) as PyTorch draws them; `parameters()`
-- counts them. At the seed's sizes (E = 512, D = 768; M = 768, F = L = 64, 12 heads): LSTM
-- 3,935,232, PeepholeLSTM 3,937,536, GRU 2,953,728, ChoGRU 2,951,424 (2,949,120 of them in
-- its two matrices), Attention 147,456, MultiHeadAttention 2,359,296 (1,769,472 in the three
-- input projections, 589,824 in wo). Each run names its inputs' axes after the model's
-- parameters, as its weights do (x : T×B×inputs, h : B×hidden), so an input of another width
-- is refused naming the axis (E331) and the weights' axes are checked through the cells.

-- LSTM(inputs, hidden, seed) · the LSTM of lstm: run(x, h, c) walks a sequence T×B×inputs.
model LSTM(inputs, hidden, seed) : Learner {
  weight wx : Tensor[inputs, hidden, 4] from drawn(uniform(seed), hidden)
  weight wh : Tensor[hidden, hidden, 4] from drawn(uniform(seed), hidden)
  weight b  : Tensor[hidden, 4]         from drawn(uniform(seed), hidden)
  def run(x : T×B×inputs, h : B×hidden, c : B×hidden) : (B×hidden, B×hidden) ≔ lstm(x, h, c, wx, wh, b)
}

-- PeepholeLSTM(inputs, hidden, seed) · Graves' LSTM with diagonal peepholes.
model PeepholeLSTM(inputs, hidden, seed) : Learner {
  weight wx : Tensor[inputs, hidden, 4] from drawn(uniform(seed), hidden)
  weight wh : Tensor[hidden, hidden, 4] from drawn(uniform(seed), hidden)
  weight b  : Tensor[hidden, 4]         from drawn(uniform(seed), hidden)
  weight p  : Tensor[hidden, 3]         from drawn(uniform(seed), hidden)
  def run(x : T×B×inputs, h : B×hidden, c : B×hidden) : (B×hidden, B×hidden) ≔ peepholeLstm(x, h, c, wx, wh, b, p)
}

-- GRU(inputs, hidden, seed) · PyTorch's GRU, two biases.
model GRU(inputs, hidden, seed) : Learner {
  weight wx : Tensor[inputs, hidden, 3] from drawn(uniform(seed), hidden)
  weight wh : Tensor[hidden, hidden, 3] from drawn(uniform(seed), hidden)
  weight bx : Tensor[hidden, 3]         from drawn(uniform(seed), hidden)
  weight bh : Tensor[hidden, 3]         from drawn(uniform(seed), hidden)
  def run(x : T×B×inputs, h : B×hidden) : B×hidden ≔ gru(x, h, wx, wh, bx, bh)
}

-- ChoGRU(inputs, hidden, seed) · Cho's GRU with one bias per block.
model ChoGRU(inputs, hidden, seed) : Learner {
  weight wx : Tensor[inputs, hidden, 3] from drawn(uniform(seed), hidden)
  weight wh : Tensor[hidden, hidden, 3] from drawn(uniform(seed), hidden)
  weight b  : Tensor[hidden, 3]         from drawn(uniform(seed), hidden)
  def run(x : T×B×inputs, h : B×hidden) : B×hidden ≔ choGru(x, h, wx, wh, b)
}

-- Attention(width, key, value, seed) · one head of self-attention, without biases.
model Attention(width, key, value, seed) : Learner {
  weight wq : Tensor[width, key]   from drawn(uniform(seed), width)
  weight wk : Tensor[width, key]   from drawn(uniform(seed), width)
  weight wv : Tensor[width, value] from drawn(uniform(seed), width)
  def run(x : B×T×width) : B×T×value ≔ attention(x, wq, wk, wv)
}

-- MultiHeadAttention(width, heads, key, value, seed) · several heads and the output projection.
model MultiHeadAttention(width, heads, key, value, seed) : Learner {
  weight wq : Tensor[heads, width, key]   from drawn(uniform(seed), width)
  weight wk : Tensor[heads, width, key]   from drawn(uniform(seed), width)
  weight wv : Tensor[heads, width, value] from drawn(uniform(seed), width)
  weight wo : Tensor[heads, value, width] from drawn(uniform(seed), width)
  def run(x : B×T×width) : B×T×width ≔ multiHead(x, wq, wk, wv, wo)
  def runCausal(x : B×T×width) : B×T×width ≔ causalMultiHead(x, wq, wk, wv, wo)
}

-- drawn(u, n) · u uniform draws in [0, 1), any shape · n width scalar → same shape
-- The draws moved to ±1/√n.
def drawn(u, n) ≔ (2 · u − 1) / sqrt(n)


-- Proportional hazards
--
-- Cox's model (1972) of how fast events happen to subjects that differ: the hazard of a
-- subject with covariates x_i is a baseline hazard times the factor exp(x_i · b), so two subjects'
-- hazards stand in a fixed ratio at every time. hazardOf answers that factor, the hazard ratio
-- against a subject whose covariates are all 0 (with a column of ones in x, the exponential of
-- its coefficient is the baseline itself). The linear predictor x_i · b is clamped to
-- [−700, 700] before the exponential, so the ratio is always finite and above 0: from
-- e^−700 ≈ 9.9e−305 to e^700 ≈ 1.0e304 (exp overflows to infinity past 709.78, and e^−745
-- underflows to 0). A NaN predictor stays NaN. 1 − e^(−h) is then the chance of at least one
-- event for a hazard integrated to h.

-- hazardOf(x, b) · x covariates n×p, one row per subject · b coefficients vector p → hazard ratios vector n
-- Proportional hazards, exp(x_i · b), with x_i · b clamped to [−700, 700].
-- Instead: for one subject, pass its covariates as a matrix of one row, [x].
def hazardOf(x, b) ≔ exp(clipped(einsum("np,p->n", x, b), −700, 700))
