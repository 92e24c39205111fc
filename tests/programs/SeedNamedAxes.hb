-- The seed's models in named axes (seed 003, "Translating papers"): B batch, E inputs, D the
-- state, R the affine family's destination (|R| = |D| = 768 but R ≠ D), T query and T′ key
-- positions, M model width, F key width, L value width, N heads. Every weight's dims name its
-- axes, so each method is checked when the file loads (docs/language.md, "Named axes").
-- A weight's dim is a parameter's name and names have no primes, so the destination model
-- coordinates the seed calls M′ are O here.

open Prelude.Arithmetic
open Prelude.Sequences

-- affine(x, h, w, u, b) · x B×E · h B×D · w E×R · u D×R · b R → B×D
-- The shared affine family x Wᵃ + h Uᵃ + bᵃ over R, renamed explicitly to D.
def affine(x : B×E, h : B×D, w : E×R, u : D×R, b : R) : B×D ≔
  let z ≔ einsum("be,er->br", x, w) + einsum("bd,dr->br", h, u)
  in rename(z + einsum("br,r->br", z ^ 0, b), R → D)

-- peep(p, c) · p diagonal peephole D · c memory B×D → B×D: D parameters, not D².
def peep(p : D, c : B×D) : B×D ≔ einsum("d,bd->bd", p, c)

-- Graves (2013) §2.1, Eqs. 7–11, with diagonal peepholes: 4D(E+D+1) + 3D parameters.
model Peephole(E, D, R, seed) : Learner {
  weight wi : Tensor[E, R] from drawn(uniform(seed), E)
  weight ui : Tensor[D, R] from drawn(uniform(seed), D)
  weight bi : Tensor[R]    from drawn(uniform(seed), D)
  weight wf : Tensor[E, R] from drawn(uniform(seed), E)
  weight uf : Tensor[D, R] from drawn(uniform(seed), D)
  weight bf : Tensor[R]    from drawn(uniform(seed), D)
  weight wc : Tensor[E, R] from drawn(uniform(seed), E)
  weight uc : Tensor[D, R] from drawn(uniform(seed), D)
  weight bc : Tensor[R]    from drawn(uniform(seed), D)
  weight wo : Tensor[E, R] from drawn(uniform(seed), E)
  weight uo : Tensor[D, R] from drawn(uniform(seed), D)
  weight bo : Tensor[R]    from drawn(uniform(seed), D)
  weight pi : Tensor[D]    from drawn(uniform(seed), D)
  weight pf : Tensor[D]    from drawn(uniform(seed), D)
  weight po : Tensor[D]    from drawn(uniform(seed), D)

  -- memory(x, h, c) · the next memory c_t: the input and forget gates read c_{t−1}.
  def memory(x : B×E, h : B×D, c : B×D) : B×D ≔
    sigmoid(affine(x, h, wf, uf, bf) + peep(pf, c)) · c
      + sigmoid(affine(x, h, wi, ui, bi) + peep(pi, c)) · tanh(affine(x, h, wc, uc, bc))

  -- state(x, h, c) · the next state h_t: the output gate reads the new memory c_t.
  def state(x : B×E, h : B×D, c : B×D) : B×D ≔
    let c2 ≔ memory(x, h, c) in sigmoid(affine(x, h, wo, uo, bo) + peep(po, c2)) · tanh(c2)
}

-- Cho et al. (2014) §2.3, reset before the projection, one bias per block: 3D(E+D+1).
model ChoGRU(E, D, R, seed) : Learner {
  weight wr : Tensor[E, R] from drawn(uniform(seed), E)
  weight ur : Tensor[D, R] from drawn(uniform(seed), D)
  weight br : Tensor[R]    from drawn(uniform(seed), D)
  weight wz : Tensor[E, R] from drawn(uniform(seed), E)
  weight uz : Tensor[D, R] from drawn(uniform(seed), D)
  weight bz : Tensor[R]    from drawn(uniform(seed), D)
  weight wn : Tensor[E, R] from drawn(uniform(seed), E)
  weight un : Tensor[D, R] from drawn(uniform(seed), D)
  weight bn : Tensor[R]    from drawn(uniform(seed), D)

  def state(x : B×E, h : B×D) : B×D ≔
    let z ≔ sigmoid(affine(x, h, wz, uz, bz)),
        n ≔ tanh(affine(x, sigmoid(affine(x, h, wr, ur, br)) · h, wn, un, bn))
    in z · h + (1 − z) · n
}

-- PyTorch's nn.GRU: reset after the recurrent projection, two biases per block: 3D(E+D+2).
model TorchGRU(E, D, R, seed) : Learner {
  weight wr : Tensor[E, R] from drawn(uniform(seed), E)
  weight ur : Tensor[D, R] from drawn(uniform(seed), D)
  weight br : Tensor[R]    from drawn(uniform(seed), D)
  weight cr : Tensor[R]    from drawn(uniform(seed), D)
  weight wz : Tensor[E, R] from drawn(uniform(seed), E)
  weight uz : Tensor[D, R] from drawn(uniform(seed), D)
  weight bz : Tensor[R]    from drawn(uniform(seed), D)
  weight cz : Tensor[R]    from drawn(uniform(seed), D)
  weight wn : Tensor[E, R] from drawn(uniform(seed), E)
  weight un : Tensor[D, R] from drawn(uniform(seed), D)
  weight bn : Tensor[R]    from drawn(uniform(seed), D)
  weight cn : Tensor[R]    from drawn(uniform(seed), D)

  def state(x : B×E, h : B×D) : B×D ≔
    let r ≔ sigmoid(affine(x, h, wr, ur, br) + lift(h, cr)),
        z ≔ sigmoid(affine(x, h, wz, uz, bz) + lift(h, cz)),
        n ≔ tanh(affine(x, 0 · h, wn, un, bn) + r · affine(0 · x, h, wn, un, cn))
    in (1 − z) · n + z · h
}

-- lift(h, b) · b R repeated down the rows of h, as D.
def lift(h : B×D, b : R) : B×D ≔ rename(einsum("b,r->br", einsum("bd->b", h) ^ 0, b), R → D)

-- Vaswani et al. (2017) §3.2.1, one head: 3·M·F parameters (F = L).
model Head(M, F, L, seed) : Learner {
  weight wq : Tensor[M, F] from drawn(uniform(seed), M)
  weight wk : Tensor[M, F] from drawn(uniform(seed), M)
  weight wv : Tensor[M, L] from drawn(uniform(seed), M)

  def attend(x : B×T×M, xs : B×T′×M) : B×T×L ≔
    let q ≔ einsum("btm,mf->btf", x, wq),
        k ≔ einsum("bsm,mf->bsf", xs, wk),
        v ≔ einsum("bsm,ml->bsl", xs, wv),
        e ≔ exp(einsum("btf,bsf->bts", q, k) / sqrt(columns(wq))),
        a ≔ einsum("bts,bt->bts", e, 1 / einsum("bts->bt", e))
    in einsum("bts,bsl->btl", a, v)
}

-- §3.2.2, N heads and the output projection onto O (the seed's M′), renamed to M for the
-- residual: N·M·(2F + L) + N·L·O parameters.
model Heads(N, M, F, L, O, seed) : Learner {
  weight wq : Tensor[N, M, F] from drawn(uniform(seed), M)
  weight wk : Tensor[N, M, F] from drawn(uniform(seed), M)
  weight wv : Tensor[N, M, L] from drawn(uniform(seed), M)
  weight wo : Tensor[N, L, O] from drawn(uniform(seed), L)

  def block(x : B×T×M) : B×T×M ≔
    let xs ≔ rename(x, T → T′),
        q ≔ einsum("btm,nmf->bntf", x, wq),
        k ≔ einsum("bsm,nmf->bnsf", xs, wk),
        v ≔ einsum("bsm,nml->bnsl", xs, wv),
        f ≔ einsum("nmf->", wk ^ 0) / (rows(wk) · columns(wk)),
        e ≔ exp(einsum("bntf,bnsf->bnts", q, k) / sqrt(f)),
        a ≔ einsum("bnts,bnt->bnts", e, 1 / einsum("bnts->bnt", e))
    in x + rename(einsum("bnts,bnsl,nlo->bto", a, v, wo), O → M)
}
