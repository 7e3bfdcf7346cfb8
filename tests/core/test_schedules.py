import pytest

from svibench.numerics.schedules import beta_from_w, make_schedule, robbins_monro


def test_robbins_monro_values():
    assert robbins_monro(1, t0=0.0, kappa=0.75) == 1.0
    assert robbins_monro(16, t0=0.0, kappa=0.75) == pytest.approx(16 ** -0.75)
    assert robbins_monro(3, t0=1.0, kappa=0.5 + 1e-9) == pytest.approx(0.5, rel=1e-6)


def test_beta_from_w_is_the_cvi_step():
    assert beta_from_w(0.4) == pytest.approx(0.4 / 1.4)
    assert make_schedule(w=1.0)(7) == 0.5


def test_constant_and_invalid_schedules():
    assert make_schedule(rho=0.3)(100) == 0.3
    for bad in ({"rho": 0.0}, {"rho": 1.5}, {"kappa": 0.5}, {"kappa": 1.2}, {"t0": -1.0}, {"rho": 0.5, "w": 1.0}):
        with pytest.raises(ValueError):
            make_schedule(**bad)
