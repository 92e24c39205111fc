-- Networks
--
-- The mathematics of neural networks in the same language as the rest of the Prelude: a
-- dense layer is one contraction, backpropagation is the same contraction with its subscripts
-- read the other way, attention is two contractions and a softmax, and a recurrent network is
-- a definition that names itself (a loop, not an unrolled graph). It is not a training
-- framework: it suits small models, teaching and verification.
--
-- Conventions. A batch is a matrix with one row per sample: inputs x are n×p, targets y are
-- n×q. A weight matrix maps columns to columns, so w1 is p×h and w2 is h×q, and the widths of
-- the network are read from the shapes of the weights passed. No layer carries a bias: to have
-- one, append a column of ones to x. Initial weights and random draws are always arguments, so
-- every result is a deterministic function of its inputs. stepFirst and stepSecond are the
-- steps a `model … : Learner` calls from its train method; the mlp…, auto… and gan…
-- definitions run a whole fit of t steps inside one call.
--
-- relu, sigmoid, softmaxRows, descend, floorOf and lifted come from Prelude.Arithmetic; mean
-- and rowMean come from Prelude.Statistics.

open Prelude.Arithmetic
open Prelude.Statistics


-- A dense layer, forward: Ŷ = relu(X W1) W2

-- dense(a, w) · a activations n×p · w weights p×q → activations n×q
-- One linear layer without a bias, one output row per input row: (A W)_ij = Σ_k A_ik W_kj.
def dense(a, w)      ≔ einsum("np,pq->nq", a, w)

-- hiddenOf(x, w1) · x inputs n×p · w1 first-layer weights p×h → hidden activations n×h
-- The rectified hidden layer of the two-layer network, relu(X W1).
def hiddenOf(x, w1)  ≔ relu(preHidden(x, w1))

-- outputs(x, w1, w2) · x inputs n×p · w1 first-layer weights p×h · w2 second-layer weights h×q → outputs n×q
-- The forward pass of the two-layer network, relu(X W1) W2; the output is raw (linear).
def outputs(x, w1, w2) ≔ dense(hiddenOf(x, w1), w2)

-- Building blocks

-- preHidden(x, w1) · x inputs n×p · w1 first-layer weights p×h → n×h
-- The hidden layer before the rectifier, X W1.
def preHidden(x, w1) ≔ dense(x, w1)


-- Backward, and one gradient step
--
-- The network is trained on L = 1/(2n) ‖Ŷ − Y‖². With δout = (Ŷ − Y)/n and
-- δhid = (δout W2ᵀ) ⊙ [X W1 > 0], the gradients are ∇W2 L = Hᵀ δout and ∇W1 L = Xᵀ δhid.
-- The rectifier's derivative is taken as [z > 0], so it is 0 at z = 0.

-- stepFirst(r, x, y, w1, w2) · r learning rate scalar · x inputs n×p · y targets n×q · w1 weights p×h · w2 weights h×q → updated first-layer weights p×h
-- One gradient-descent step on w1, W1 − r Xᵀ δhid, with the gradient evaluated at the current w1 and w2.
def stepFirst(r, x, y, w1, w2)  ≔ descend(w1, gradFirst(x, y, w1, w2), r)

-- stepSecond(r, x, y, w1, w2) · r learning rate scalar · x inputs n×p · y targets n×q · w1 weights p×h · w2 weights h×q → updated second-layer weights h×q
-- One gradient-descent step on w2, W2 − r relu(X W1)ᵀ δout, evaluated at the same current weights as stepFirst.
def stepSecond(r, x, y, w1, w2) ≔ descend(w2, gradSecond(x, y, w1, w2), r)

-- Building blocks

-- outDelta(x, y, w1, w2) · x n×p · y n×q · w1 p×h · w2 h×q → n×q
-- The output error divided by the number of rows, (relu(X W1) W2 − Y) / n.
def outDelta(x, y, w1, w2) ≔ (outputs(x, w1, w2) − y) / rows(x)

-- hidDelta(x, y, w1, w2) · x n×p · y n×q · w1 p×h · w2 h×q → n×h
-- The output error carried back through w2 and gated by the rectifier's derivative, (δout W2ᵀ) ⊙ [X W1 > 0].
def hidDelta(x, y, w1, w2) ≔ einsum("nq,hq->nh", outDelta(x, y, w1, w2), w2) · (preHidden(x, w1) > 0)

-- gradSecond(x, y, w1, w2) · x n×p · y n×q · w1 p×h · w2 h×q → h×q
-- The gradient of the loss with respect to w2, relu(X W1)ᵀ δout.
def gradSecond(x, y, w1, w2) ≔ einsum("nh,nq->hq", hiddenOf(x, w1), outDelta(x, y, w1, w2))

-- gradFirst(x, y, w1, w2) · x n×p · y n×q · w1 p×h · w2 h×q → p×h
-- The gradient of the loss with respect to w1, Xᵀ δhid.
def gradFirst(x, y, w1, w2) ≔ einsum("np,nh->ph", x, hidDelta(x, y, w1, w2))


-- The fit
--
-- t steps of full-batch gradient descent, updating both weight matrices together at every
-- step. A loop answers one tensor, so the fit is walked once per weight matrix; both walks
-- step both matrices, so the answers come from the same run.

-- mlpFirst(t, r, x, y, w1, w2) · t number of steps scalar · r learning rate scalar · x inputs n×p · y targets n×q · w1 starting weights p×h · w2 starting weights h×q → trained first-layer weights p×h
-- The first-layer weights after t simultaneous gradient steps on both layers.
def mlpFirst(t, r, x, y, w1, w2)  ≔ firstLoop(t, r, x, y, w1, w2)

-- mlpSecond(t, r, x, y, w1, w2) · arguments as mlpFirst → trained second-layer weights h×q
-- The second-layer weights after the same t gradient steps.
def mlpSecond(t, r, x, y, w1, w2) ≔ secondLoop(t, r, x, y, w1, w2)

-- mlpPredict(t, r, x, y, w1, w2, z) · arguments as mlpFirst · z queries m×p → outputs m×q
-- Trains the network for t steps on x and y, then runs the forward pass on the queries z.
def mlpPredict(t, r, x, y, w1, w2, z) ≔ outputs(z, mlpFirst(t, r, x, y, w1, w2), mlpSecond(t, r, x, y, w1, w2))

-- mlpFit(t, r, x, y, w1, w2) · arguments as mlpFirst → fitted outputs n×q
-- The trained network's outputs on its own training inputs.
def mlpFit(t, r, x, y, w1, w2) ≔ mlpPredict(t, r, x, y, w1, w2, x)

-- mlpShares(t, r, x, y, w1, w2, z) · arguments as mlpPredict → class shares m×q, each row summing to one
-- The softmax of each row of mlpPredict's outputs, read as logits; training is the same squared-error descent.
def mlpShares(t, r, x, y, w1, w2, z) ≔ softmaxRows(mlpPredict(t, r, x, y, w1, w2, z))

-- Building blocks

-- firstLoop(t, r, x, y, w1, w2) · arguments as mlpFirst → p×h
-- Steps both weight matrices t times and answers the first.
def firstLoop(t, r, x, y, w1, w2) ≔
  if t = 0 then w1
  else firstLoop(t − 1, r, x, y, stepFirst(r, x, y, w1, w2), stepSecond(r, x, y, w1, w2))

-- secondLoop(t, r, x, y, w1, w2) · arguments as mlpFirst → h×q
-- Steps both weight matrices t times and answers the second.
def secondLoop(t, r, x, y, w1, w2) ≔
  if t = 0 then w2
  else secondLoop(t − 1, r, x, y, stepFirst(r, x, y, w1, w2), stepSecond(r, x, y, w1, w2))


-- The autoencoder
--
-- A linear autoencoder X̂ = X W1 W2, with w1 p×k and w2 k×p, trained on 1/(2n) ‖X̂ − X‖².
-- With a bottleneck of k units it spans the same subspace as the first k principal
-- components, so it reaches PCA's reconstruction error, though its units are neither
-- orthogonal nor ordered.

-- encoded(x, w1) · x data n×p · w1 encoder weights p×k → codes n×k
-- The bottleneck representation, X W1.
def encoded(x, w1)          ≔ dense(x, w1)

-- rebuilt(x, w1, w2) · x data n×p · w1 encoder weights p×k · w2 decoder weights k×p → reconstruction n×p
-- The reconstruction of the data through the bottleneck, X W1 W2.
def rebuilt(x, w1, w2)      ≔ dense(encoded(x, w1), w2)

-- autoCode(t, r, x, w1, w2) · t number of steps scalar · r learning rate scalar · x data n×p · w1 starting encoder p×k · w2 starting decoder k×p → trained encoder p×k
-- The encoder weights after t simultaneous gradient steps on both matrices.
def autoCode(t, r, x, w1, w2)   ≔ codeLoop(t, r, x, w1, w2)

-- autoBuild(t, r, x, w1, w2) · arguments as autoCode → trained decoder k×p
-- The decoder weights after the same t steps.
def autoBuild(t, r, x, w1, w2)  ≔ buildLoop(t, r, x, w1, w2)

-- autoFit(t, r, x, w1, w2) · arguments as autoCode → reconstruction n×p
-- Trains the autoencoder and returns its reconstruction of x, X W1⁽ᵗ⁾ W2⁽ᵗ⁾.
def autoFit(t, r, x, w1, w2)    ≔ rebuilt(x, autoCode(t, r, x, w1, w2), autoBuild(t, r, x, w1, w2))

-- Building blocks

-- rebuildDelta(x, w1, w2) · x n×p · w1 p×k · w2 k×p → n×p
-- The reconstruction error divided by the number of rows, (X W1 W2 − X) / n.
def rebuildDelta(x, w1, w2) ≔ (rebuilt(x, w1, w2) − x) / rows(x)

-- rebuildSecond(x, w1, w2) · x n×p · w1 p×k · w2 k×p → k×p
-- The gradient of the reconstruction loss with respect to the decoder, (X W1)ᵀ Δ.
def rebuildSecond(x, w1, w2) ≔ einsum("nk,np->kp", encoded(x, w1), rebuildDelta(x, w1, w2))

-- rebuildFirst(x, w1, w2) · x n×p · w1 p×k · w2 k×p → p×k
-- The gradient of the reconstruction loss with respect to the encoder, Xᵀ Δ W2ᵀ.
def rebuildFirst(x, w1, w2) ≔ einsum("np,nq,kq->pk", x, rebuildDelta(x, w1, w2), w2)

-- codeLoop(t, r, x, w1, w2) · arguments as autoCode → p×k
-- Steps both matrices t times and answers the encoder.
def codeLoop(t, r, x, w1, w2) ≔
  if t = 0 then w1
  else codeLoop(t − 1, r, x, w1 − r · rebuildFirst(x, w1, w2), w2 − r · rebuildSecond(x, w1, w2))

-- buildLoop(t, r, x, w1, w2) · arguments as autoCode → k×p
-- Steps both matrices t times and answers the decoder.
def buildLoop(t, r, x, w1, w2) ≔
  if t = 0 then w2
  else buildLoop(t − 1, r, x, w1 − r · rebuildFirst(x, w1, w2), w2 − r · rebuildSecond(x, w1, w2))


-- Layer normalisation
--
-- Each row standardised across its features: LN(a)_ij = (a_ij − μ_i) / √(σ_i² + 1e-5), with
-- μ_i the row's mean and σ_i² its population variance.

-- layerNorm(a) · a activations n×p → normalised activations n×p
-- Each row centred to mean zero and scaled to unit (population) variance, 1e-5 added to the variance; a single column normalises to 0.
def layerNorm(a) ≔ rowCentre(a) / lifted(a, sqrt(rowVar(a) + 1e-5))

-- Building blocks (rowMean, the mean of each row, comes from Prelude.Statistics)

-- rowCentre(a) · a n×p → n×p
-- Each row minus its own mean, A_ij − μ_i.
def rowCentre(a) ≔ a − lifted(a, rowMean(a))

-- rowVar(a) · a n×p → vector n
-- The population variance of each row, (1/p) Σ_j (A_ij − μ_i)².
def rowVar(a) ≔ rowMean(rowCentre(a)²)


-- Attention
--
-- Attention(Q, K, V) = softmaxRows(Q Kᵀ / √d) V. A causal mask lets position i attend only to
-- positions j ≤ i; the forbidden scores are lowered by 1e300 rather than removed, so each row
-- is still a proper softmax.

-- attentionOf(q, k, v, d) · q queries m×e · k keys n×e · v values n×c · d scale, usually the key width scalar → attended values m×c
-- Each output row is a weighted average of the rows of v, with weights softmax(q_i Kᵀ / √d).
def attentionOf(q, k, v, d)  ≔ einsum("qk,ke->qe", softmaxRows(attentionScores(q, k, d)), v)

-- causalAttention(q, k, v, d) · q queries n×e · k keys n×e · v values n×c · d scale scalar → attended values n×c
-- Attention in which row i may only read positions 0 … i; queries and keys must have the same number of rows.
def causalAttention(q, k, v, d) ≔ einsum("qk,ke->qe", softmaxRows(causalScores(q, k, d)), v)

-- selfAttention(a, wq, wk, wv, d) · a sequence n×p · wq query projection p×e · wk key projection p×e · wv value projection p×c · d scale scalar → attended sequence n×c
-- Attention whose queries, keys and values are three projections of the same sequence.
def selfAttention(a, wq, wk, wv, d) ≔ attentionOf(dense(a, wq), dense(a, wk), dense(a, wv), d)

-- Building blocks

-- attentionScores(q, k, d) · q m×e · k n×e · d scalar → m×n
-- The score matrix, query-key dot products divided by the square root of d: Q Kᵀ / √d.
def attentionScores(q, k, d) ≔ einsum("me,ne->mn", q, k) / sqrt(d)

-- causalOf(s) · s n×n (only its shape is read) → 0/1 matrix n×n
-- A mask the shape of s holding ones on and below the diagonal, [j ≤ i].
def causalOf(s) ≔ einsum("ij,j->ij", s ^ 0, positions(s, 1)) ≤ lifted(s, positions(s, 0))

-- causalScores(q, k, d) · q n×e · k n×e · d scalar → n×n
-- The attention scores with every entry above the diagonal lowered by 1e300, S_ij − 1e300 [j > i].
def causalScores(q, k, d) ≔ attentionScores(q, k, d) − 1e300 · (1 − causalOf(attentionScores(q, k, d)))


-- Dropout

-- dropped(a, u, p) · a activations, any shape · u uniform draws in [0, 1), same shape as a · p drop probability scalar → activations, same shape as a
-- The entries where u ≥ p kept and scaled by 1 / max(1 − p, 1e-12), the rest zeroed; p = 1 returns zeros.
def dropped(a, u, p) ≔ a · (u ≥ p) / max(1 − p, 1e-12)


-- Convolution and pooling
--
-- The unflipped one-dimensional convolution (cross-correlation) y_it = Σ_j x_i,t+j k_j, built
-- from a 0/1 window tensor with a one at (t, j, s) exactly when s = t + j. Positions along a
-- signal are 0 … L−1 and kernel taps 0 … K−1; a signal reads as zero past its end, so the
-- output keeps length L and its tail sees zero padding.

-- convolve(x, k) · x signals b×L (one signal per row) · k kernel vector K → filtered signals b×L
-- The sliding weighted sum Σ_j x_i,t+j k_j, zero-padded at the tail.
def convolve(x, k)   ≔ einsum("is,tjs,j->it", x, windowOf(x, k), k)

-- maxPool(x, k) · x signals b×L · k any vector whose length K is the window width → pooled signals b×L
-- The largest entry of each window x_i,t … x_i,t+K−1; only k's length is read, and on a negative signal the last windows read at least 0.
def maxPool(x, k)    ≔ maximum(gathered(x, k), 2)

-- meanPool(x, k) · x signals b×L · k window vector K → pooled signals b×L
-- Intended as the mean of each window, (1/c) Σ_j x_i,t+j with c = columns(k^0) = K. But a vector
-- has no columns (no second axis), so columns(k^0) is undefined for it, and a call with a vector
-- window fails at run time with a rank error, as the seed documents. Do not call it.
-- Instead: call convolve(x, k) with a kernel of K equal weights 1/K, which computes the intended window mean (with the same tail padding).
def meanPool(x, k)   ≔ einsum("itj->it", gathered(x, k)) / columns(k^0)

-- Building blocks

-- siteIds(x) · x signals b×L → vector L
-- The positions along a signal, 0, 1, …, L−1.
def siteIds(x) ≔ positions(x, 1)

-- tapIds(k) · k kernel vector K → vector K
-- The positions along a kernel, 0, 1, …, K−1.
def tapIds(k) ≔ positions(k, 0)

-- windowFrom(x, k) · x signals b×L · k kernel vector K → L×K×L
-- The tensor holding t + j at every entry (t, j, s).
def windowFrom(x, k) ≔ einsum("t,j,s->tjs", siteIds(x), tapIds(k) ^ 0, siteIds(x) ^ 0) + einsum("t,j,s->tjs", siteIds(x) ^ 0, tapIds(k), siteIds(x) ^ 0)

-- windowTo(x, k) · x signals b×L · k kernel vector K → L×K×L
-- The tensor holding s at every entry (t, j, s).
def windowTo(x, k) ≔ einsum("t,j,s->tjs", siteIds(x) ^ 0, tapIds(k) ^ 0, siteIds(x))

-- windowOf(x, k) · x signals b×L · k kernel vector K → 0/1 tensor L×K×L
-- The 0/1 window, [s = t + j].
def windowOf(x, k) ≔ windowTo(x, k) = windowFrom(x, k)

-- gathered(x, k) · x signals b×L · k kernel vector K → b×L×K
-- Every window of every signal, x_i,t+j, which is 0 when t + j ≥ L.
def gathered(x, k) ≔ einsum("is,tjs->itj", x, windowOf(x, k))


-- Recurrence
--
-- A recurrent network carries a state through a sequence, h_t+1 = tanh(h_t W_h + x_t w_x).
-- The definition names itself, so it compiles to a loop over time, not an unrolled graph.
-- Each sequence supplies one scalar reading per time step.

-- stateStep(h, xt, wh, wx) · h state b×w · xt readings at this step vector b · wh state-to-state weights w×w · wx reading weights vector w → next state b×w
-- One step of the recurrence, tanh(H W_h + x w_xᵀ).
def stateStep(h, xt, wh, wx) ≔ tanh(einsum("ng,gh->nh", h, wh) + einsum("n,h->nh", xt, wx))

-- recurrent(x, wh, wx, h0) · x sequences b×T (one sequence per row) · wh state weights w×w · wx reading weights vector w · h0 initial state b×w → final state b×w
-- The state after the last time step, the sequence having been walked forwards.
def recurrent(x, wh, wx, h0) ≔ stateLoop(columns(x), x, siteIds(x), wh, wx, h0)

-- Building blocks

-- atTime(x, ids, t) · x sequences b×T · ids positions vector T · t time step scalar → vector b
-- Column t of the sequences, read by contraction against the one-hot [ids_s = t].
def atTime(x, ids, t) ≔ einsum("is,s->i", x, (ids = t))

-- stateLoop(t, x, ids, wh, wx, h) · t steps left scalar · x sequences b×T · ids positions vector T · wh w×w · wx vector w · h state b×w → final state b×w
-- Applies stateStep for the remaining t steps, reading column T − t next, walking the sequence forwards.
def stateLoop(t, x, ids, wh, wx, h) ≔
  if t = 0 then h
  else stateLoop(t − 1, x, ids, wh, wx, stateStep(h, atTime(x, ids, columns(x) − t), wh, wx))


-- The gated cell
--
-- A long short-term memory (LSTM) cell: c_t+1 = f ⊙ c_t + i ⊙ g and h_t+1 = o ⊙ tanh(c_t+1),
-- with the forget, input and output gates f, i, o from gateOf and the candidate g from
-- candidateOf, each with its own weights. No LSTM loop is provided; compose one.

-- gateOf(h, xt, wh, wx) · h state b×w · xt readings vector b · wh weights w×w · wx weights vector w → gate values in (0, 1) b×w
-- A gate, σ(H W_h + x w_xᵀ); call it once each, with its own weights, for the forget, input and output gates.
def gateOf(h, xt, wh, wx)      ≔ sigmoid(einsum("ng,gh->nh", h, wh) + einsum("n,h->nh", xt, wx))

-- candidateOf(h, xt, wh, wx) · arguments as gateOf → candidate values in (−1, 1) b×w
-- The candidate memory, tanh(H W_h + x w_xᵀ).
def candidateOf(h, xt, wh, wx) ≔ tanh(einsum("ng,gh->nh", h, wh) + einsum("n,h->nh", xt, wx))

-- cellMemory(c, f, i, g) · c memory b×w · f forget gate b×w · i input gate b×w · g candidate b×w → next memory b×w
-- The additive memory update, f ⊙ c + i ⊙ g.
def cellMemory(c, f, i, g)     ≔ f · c + i · g

-- cellHidden(c, o) · c memory b×w · o output gate b×w → hidden state b×w
-- The exposed state, o ⊙ tanh(c).
def cellHidden(c, o)           ≔ o · tanh(c)


-- The adversarial pair
--
-- A critic D(a) = σ(a w_d) scores a sample as real; a maker G(z) = z W_g produces samples from
-- noise. L_D = −mean ln D(x_real) − mean ln(1 − D(G(z))) and L_G = −mean ln D(G(z)), both
-- trained by simultaneous gradient descent. Nothing here guarantees that the pair converges.

-- critic(a, wd) · a samples n×p · wd critic weights vector p → probability each sample is real vector n
-- The logistic score σ(A w_d) for every row; there is no bias term.
def critic(a, wd)      ≔ sigmoid(einsum("np,p->n", a, wd))

-- madeFrom(z, wg) · z noise m×q · wg maker weights q×p → generated samples m×p
-- The maker's samples Z W_g, one per row of noise.
def madeFrom(z, wg)    ≔ einsum("mq,qp->mp", z, wg)

-- criticLoss(real, fake, wd) · real real samples n×p · fake generated samples m×p · wd critic weights vector p → loss scalar
-- The critic's binary cross-entropy L_D, with probabilities floored at 1e-12 before the logarithm.
def criticLoss(real, fake, wd) ≔ 0 − mean(ln(floorOf(critic(real, wd)))) − mean(ln(floorOf(1 − critic(fake, wd))))

-- makerLoss(fake, wd) · fake generated samples m×p · wd critic weights vector p → loss scalar
-- The maker's loss L_G (the non-saturating form), floored the same way.
def makerLoss(fake, wd)        ≔ 0 − mean(ln(floorOf(critic(fake, wd))))

-- criticStep(r, real, z, wg, wd) · r learning rate scalar · real real samples n×p · z noise m×q · wg maker weights q×p · wd critic weights vector p → updated critic weights vector p
-- One gradient-descent step on L_D, with the fake samples made from z by the current maker.
def criticStep(r, real, z, wg, wd) ≔ descend(wd, criticGrad(real, madeFrom(z, wg), wd), r)

-- makerStep(r, z, wg, wd) · r learning rate scalar · z noise m×q · wg maker weights q×p · wd critic weights vector p → updated maker weights q×p
-- One gradient-descent step on L_G against the current critic.
def makerStep(r, z, wg, wd)        ≔ descend(wg, makerGrad(z, wg, wd), r)

-- ganCritic(t, r, real, z, wg, wd) · t number of steps scalar · r learning rate scalar · real real samples n×p · z noise m×q · wg starting maker weights q×p · wd starting critic weights vector p → critic weights vector p
-- The critic's weights after t simultaneous steps of both players.
def ganCritic(t, r, real, z, wg, wd) ≔ criticLoop(t, r, real, z, wg, wd)

-- ganMaker(t, r, real, z, wg, wd) · arguments as ganCritic → maker weights q×p
-- The maker's weights after the same t steps.
def ganMaker(t, r, real, z, wg, wd)  ≔ makerLoop(t, r, real, z, wg, wd)

-- ganSamples(t, r, real, z, wg, wd) · arguments as ganCritic → generated samples m×p
-- Trains the pair for t steps and returns the trained maker's samples from z.
def ganSamples(t, r, real, z, wg, wd) ≔ madeFrom(z, ganMaker(t, r, real, z, wg, wd))

-- Building blocks

-- criticGrad(real, fake, wd) · real n×p · fake m×p · wd vector p → vector p
-- The gradient of the unfloored critic loss, (1/m) Fᵀ D(F) − (1/n) Xᵀ (1 − D(X)).
def criticGrad(real, fake, wd) ≔ einsum("mp,m->p", fake, critic(fake, wd)) / rows(fake) − einsum("np,n->p", real, 1 − critic(real, wd)) / rows(real)

-- makerGrad(z, wg, wd) · z noise m×q · wg maker weights q×p · wd critic weights vector p → q×p
-- The gradient of the unfloored maker loss through the critic, −(1/m) Zᵀ (1 − D(Z W_g)) w_dᵀ.
def makerGrad(z, wg, wd) ≔ 0 − einsum("mq,m,p->qp", z, 1 − critic(madeFrom(z, wg), wd), wd) / rows(z)

-- criticLoop(t, r, real, z, wg, wd) · arguments as ganCritic → vector p
-- Steps both players t times and answers the critic's weights.
def criticLoop(t, r, real, z, wg, wd) ≔
  if t = 0 then wd
  else criticLoop(t − 1, r, real, z, makerStep(r, z, wg, wd), criticStep(r, real, z, wg, wd))

-- makerLoop(t, r, real, z, wg, wd) · arguments as ganCritic → q×p
-- Steps both players t times and answers the maker's weights.
def makerLoop(t, r, real, z, wg, wd) ≔
  if t = 0 then wg
  else makerLoop(t − 1, r, real, z, makerStep(r, z, wg, wd), criticStep(r, real, z, wg, wd))
