open Prelude.Networks

fn trainedOutputs(t, r, x, y, w1, w2) ↦ mlpFit(t, r, x, y, w1, w2)
fn trainedQuery(t, r, x, y, w1, w2, z) ↦ mlpPredict(t, r, x, y, w1, w2, z)
fn unrolled(x, wh, wx, h0) ↦ recurrent(x, wh, wx, h0)
fn squeezed(t, r, x, w1, w2) ↦ autoFit(t, r, x, w1, w2)
fn criticLossOf(real, fake, wd) ↦ criticLoss(real, fake, wd)
