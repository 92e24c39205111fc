-- Each level calls the one below twice: level 14 would be 16 384 additions long.
-- call: f 1
-- error: E701 at 18:1
def level0(x) ≔ x + 1
def level1(x) ≔ level0(level0(x))
def level2(x) ≔ level1(level1(x))
def level3(x) ≔ level2(level2(x))
def level4(x) ≔ level3(level3(x))
def level5(x) ≔ level4(level4(x))
def level6(x) ≔ level5(level5(x))
def level7(x) ≔ level6(level6(x))
def level8(x) ≔ level7(level7(x))
def level9(x) ≔ level8(level8(x))
def level10(x) ≔ level9(level9(x))
def level11(x) ≔ level10(level10(x))
def level12(x) ≔ level11(level11(x))
def level13(x) ≔ level12(level12(x))
def level14(x) ≔ level13(level13(x))
fn f(x) ↦ level14(x)
