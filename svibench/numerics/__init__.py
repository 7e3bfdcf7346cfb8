"""The numerical helpers the algorithms and models share, apart from the framework's contract and orchestration.

- :mod:`~svibench.numerics.optim`: stochastic optimisers (SGD with a schedule, AdaGrad, RMSprop, Adam, Adadelta);
- :mod:`~svibench.numerics.lbfgs`: a resumable L-BFGS;
- :mod:`~svibench.numerics.schedules`: step-size schedules (Robbins–Monro, constant, β = w/(1+w));
- :mod:`~svibench.numerics.quadrature`: Gauss–Hermite and Monte-Carlo Gaussian expectations;
- :mod:`~svibench.numerics.gamma_inverse`: the compiled inverse Gamma CDF behind reparameterised Gamma draws;
- :mod:`~svibench.numerics.minibatch`: minibatch sampling;
- :mod:`~svibench.numerics.transforms`: softplus and other constraining transforms.
"""
