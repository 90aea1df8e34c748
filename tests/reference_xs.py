"""Independent tree-level reference for neutrino-electron elastic scattering.

This module is deliberately written WITHOUT looking at the ``nuejax``
implementation.  The cross sections are obtained from an explicit
amplitude-level calculation: Dirac-representation gamma matrices, explicit
spinors, explicit four-momenta in the electron rest frame, and an explicit
numerical sum over spins.  No closed-form cross section is used anywhere in
the computation (closed forms only appear in ``_self_checks`` for comparison).

Conventions (see also reference_xs_notes.md)
--------------------------------------------
* Metric (+,-,-,-); Dirac representation; gamma5 = i g0 g1 g2 g3;
  P_L = (1 - gamma5)/2, P_R = (1 + gamma5)/2.
* Feynman rule: a Lagrangian term  L ⊃ C (psibar Gamma psi)(chibar Gamma' chi)
  gives i*M = i*C*[ubar Gamma u][ubar Gamma' u], i.e. M = C * (current.current).
  All amplitudes below are "M" in this convention, so relative signs between
  the contact SM term and the mediator term are fixed by the Lagrangian.
* Flavour density matrix: for a pure state |psi> = sum_b c_b |nu_b>,
      rho_{b b'} = c_b c_b'^*      (rho = sum_i p_i |psi_i><psi_i|),
  index order (e, mu, tau).  The amplitude for an incoming state psi to
  produce outgoing flavour a is sum_b c_b M_{ab}, so
      rate = sum_a sum_{b,b'} rho_{b b'} M_{ab} M_{ab'}^* = Tr[M rho M^dagger].
* Units: energies in MeV; returned dsigma/dT in cm^2/MeV.

Phase space (fixed target, lab frame)
-------------------------------------
For 2->2,  dsigma/dt = <|M|^2> / (16 pi lambda(s, 0, m^2)) with
lambda = (s - m^2)^2 = (2 m E)^2 for a massless projectile on an electron at
rest.  With t = (p1 - p2)^2 = 2 m^2 - 2 m (m + T) = -2 m T, |dt/dT| = 2 m, so
      dsigma/dT = <|M|^2> * 2m / (16 pi * 4 m^2 E^2) = <|M|^2> / (32 pi m E^2).
<|M|^2> is averaged over the electron spin (factor 1/2) and NOT over the
neutrino helicity (the incoming neutrino exists only as a left-handed state),
and summed over all final spins/helicities and final flavours.
"""

import numpy as np

# ---------------------------------------------------------------- constants
G_F = 1.1663788e-11          # MeV^-2
M_E = 0.51099895             # MeV
HBARC = 1.973269804e-11      # MeV cm
HBARC2 = HBARC ** 2          # MeV^2 cm^2: converts MeV^-3 -> cm^2/MeV
SW2_DEFAULT = 0.23867


def tree_couplings(s=SW2_DEFAULT):
    """Tree-level (gL, gR) vectors for flavours (e, mu, tau).

    The +1 on gL_e is the W-exchange (charged-current) contribution after Fierz
    rearrangement into the (nu nu)(e e) form.
    """
    gL = np.array([0.5 + s, -0.5 + s, -0.5 + s])
    gR = np.array([s, s, s])
    return gL, gR


# ------------------------------------------------------- Dirac algebra (4x4)
_I2 = np.eye(2, dtype=complex)
_Z2 = np.zeros((2, 2), dtype=complex)
_SIG = [np.array([[0, 1], [1, 0]], dtype=complex),
        np.array([[0, -1j], [1j, 0]], dtype=complex),
        np.array([[1, 0], [0, -1]], dtype=complex)]

GAMMA = [np.block([[_I2, _Z2], [_Z2, -_I2]])] + \
        [np.block([[_Z2, s], [-s, _Z2]]) for s in _SIG]
GAMMA5 = 1j * GAMMA[0] @ GAMMA[1] @ GAMMA[2] @ GAMMA[3]
ID4 = np.eye(4, dtype=complex)
P_L = 0.5 * (ID4 - GAMMA5)
P_R = 0.5 * (ID4 + GAMMA5)
METRIC = np.diag([1.0, -1.0, -1.0, -1.0])


def mdot(a, b):
    """Minkowski product of two 4-vectors (components may be complex)."""
    return a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3]


def spinor(p, m, chi):
    """Positive-energy Dirac spinor u(p) in the Dirac representation.

    u = ( sqrt(E+m) chi , (sigma.p) chi / sqrt(E+m) ), normalised to
    ubar u = 2m (and u^dagger u = 2E).  For m = 0 this is sqrt(E)(chi,
    sigma.phat chi), still valid; completeness sum_chi u ubar = pslash + m
    holds for any orthonormal basis of chi.
    """
    E = p[0]
    sp = p[1] * _SIG[0] + p[2] * _SIG[1] + p[3] * _SIG[2]
    n = np.sqrt(E + m)
    chi = np.asarray(chi, dtype=complex)
    return np.concatenate([n * chi, sp @ chi / n])


def bar(u):
    return u.conj() @ GAMMA[0]


def current(u_out, u_in, gamma_right=ID4):
    """Upper-index 4-vector J^mu = ubar_out gamma^mu Gamma u_in."""
    ub = bar(u_out)
    return np.array([ub @ g @ gamma_right @ u_in for g in GAMMA])


def scalar_bilinear(u_out, u_in):
    return bar(u_out) @ u_in


_CHI_BASIS = [np.array([1.0, 0.0]), np.array([0.0, 1.0])]


# ------------------------------------------------------------- kinematics
def kinematics(T, E, m=M_E):
    """Four-momenta (k1, p1, k2, p2) in the electron rest frame.

    Incoming neutrino along +z.  The recoil electron angle follows from
    energy-momentum conservation with a massless final neutrino:
        cos(theta_e) = (E + m)/E * sqrt(T / (T + 2m)),
    the electron is put in the x-z plane, and the final neutrino momentum is
    k2 = k1 + p1 - p2 (so momentum is conserved exactly by construction and
    k2^2 = 0 checks the angle formula).
    """
    k1 = np.array([E, 0.0, 0.0, E])
    p1 = np.array([m, 0.0, 0.0, 0.0])
    pe = np.sqrt(T * (T + 2 * m))
    c = (E + m) / E * np.sqrt(T / (T + 2 * m))
    c = min(c, 1.0)              # guard rounding at T = Tmax
    s = np.sqrt(1.0 - c * c)
    p2 = np.array([m + T, pe * s, 0.0, pe * c])
    k2 = k1 + p1 - p2
    return k1, p1, k2, p2


def t_max(E, m=M_E):
    return 2 * E * E / (m + 2 * E)


def _u_nu_left(k):
    """Left-handed (helicity -1) massless spinor for momentum along +z."""
    assert abs(k[1]) < 1e-300 and abs(k[2]) < 1e-300
    return spinor(k, 0.0, np.array([0.0, 1.0]))   # sigma_z chi = -chi


# --------------------------------------------------- spin-resolved pieces
def _spin_amplitudes_vector(T, E):
    """For every spin configuration, the two Lorentz scalars
        aL = [ubar(k2) g^mu P_L u(k1)] [ubar(p2) g_mu P_L u(p1)]
        aR = [ubar(k2) g^mu P_L u(k1)] [ubar(p2) g_mu P_R u(p1)]
    Returned as arrays of shape (n_config,).  Configurations: final neutrino
    spinor (both basis states: P_L kills the right-handed one automatically),
    initial and final electron spins.
    """
    k1, p1, k2, p2 = kinematics(T, E)
    u1 = _u_nu_left(k1)
    aL, aR = [], []
    for chi_nu in _CHI_BASIS:
        u2 = spinor(k2, 0.0, chi_nu)
        Jnu = current(u2, u1, P_L)
        for chi_e1 in _CHI_BASIS:
            ue1 = spinor(p1, M_E, chi_e1)
            for chi_e2 in _CHI_BASIS:
                ue2 = spinor(p2, M_E, chi_e2)
                aL.append(mdot(Jnu, current(ue2, ue1, P_L)))
                aR.append(mdot(Jnu, current(ue2, ue1, P_R)))
    return np.array(aL), np.array(aR)


def _prefactor(E):
    """Electron-spin average, 2->2 fixed-target phase space, units."""
    return 0.5 / (32.0 * np.pi * M_E * E * E) * HBARC2


def _rate_flavour(amps, rho):
    """sum over configurations of Tr[M rho M^dagger], M of shape (n, 3, 3)."""
    r = np.einsum('nab,bc,nac->', amps, rho, amps.conj())
    return r


def _as_matrix(x):
    return np.zeros((3, 3), complex) if x is None else np.asarray(x, complex)


def _loop(T, E, kernel):
    T, E = np.broadcast_arrays(np.asarray(T, float), np.asarray(E, float))
    out = np.zeros(T.shape)
    for idx in np.ndindex(T.shape):
        t, e = T[idx], E[idx]
        if t <= 0.0 or e <= 0.0 or t > t_max(e) * (1 + 1e-12):
            continue
        out[idx] = kernel(t, e)
    return out if out.shape else float(out)


# ------------------------------------------------------------ public API
def dsigma_dT_general(T, E, rho, gL, gR, epsL=None, epsR=None):
    """Tree-level dsigma/dT [cm^2/MeV] for an incoming flavour mixture rho.

    L = -2 sqrt2 G_F sum_ab (nubar_a g^mu P_L nu_b)[ebar g_mu (GL_ab P_L +
    GR_ab P_R) e],  GL = diag(gL) + epsL, GR = diag(gR) + epsR.
    M_ab = -2 sqrt2 G_F (aL GL_ab + aR GR_ab);  rate = Tr[M rho M^dagger]
    with rho_{b b'} = sum_i p_i c^i_b c^i*_b'  (see module docstring).
    T, E in MeV (broadcast); returns 0 outside 0 < T <= Tmax(E).
    """
    rho = np.asarray(rho, complex)
    GL = np.diag(np.asarray(gL, float)).astype(complex) + _as_matrix(epsL)
    GR = np.diag(np.asarray(gR, float)).astype(complex) + _as_matrix(epsR)

    def kernel(t, e):
        aL, aR = _spin_amplitudes_vector(t, e)
        M = -2.0 * np.sqrt(2.0) * G_F * (aL[:, None, None] * GL +
                                         aR[:, None, None] * GR)
        r = _rate_flavour(M, rho)
        # Tr[M rho M^+] is real for Hermitian rho; keep the imaginary part
        # only as a consistency check.
        assert abs(r.imag) <= 1e-9 * abs(r.real) + 1e-300, r
        return r.real * _prefactor(e)

    return _loop(T, E, kernel)


def dsigma_dT_vector_mediator(T, E, rho, gL, gR, g_nu, g_e, m_V,
                              epsL=None, epsR=None):
    """SM (+ optional eps) plus a t-channel vector V, summed at amplitude level.

    L ⊃ g_nu_a V_mu (nubar_a g^mu P_L nu_a) + g_e V_mu (ebar g^mu e).
    Feynman rules: vertices i g_nu g^mu P_L and i g_e g^nu, propagator
    -i (g_{mu nu} - q_mu q_nu / m_V^2) / (q^2 - m_V^2).  The q_mu q_nu piece
    vanishes against the conserved vector currents (massless nu, and
    ubar(p2) qslash u(p1) = 0 for the electron vector current), so
        i M_V = (i g_nu)(i g_e)(-i) J_nu.J_e / (q^2 - m_V^2)
        =>  M_V = g_nu g_e J_nu.J_e / (q^2 - m_V^2),   q^2 = -2 m_e T.
    The contact SM term in the same convention is M = C J.J with
    C = -2 sqrt2 G_F (GL, GR).  For m_V -> infinity, M_V -> -(g_nu g_e/m_V^2)
    J.J, i.e. exactly the effective operator
    -(g_nu g_e/m_V^2)(nubar g P_L nu)(ebar g e) obtained by integrating V out
    (V = -(g_nu J_nu + g_e J_e)/m_V^2 from its EOM), which equals the NSI
    form with epsL = epsR = diag(g_nu) g_e / (2 sqrt2 G_F m_V^2).
    The electron vector current is J_e = J_e(P_L) + J_e(P_R), so its
    contraction is aL + aR.
    """
    rho = np.asarray(rho, complex)
    GL = np.diag(np.asarray(gL, float)).astype(complex) + _as_matrix(epsL)
    GR = np.diag(np.asarray(gR, float)).astype(complex) + _as_matrix(epsR)
    Gnu = np.diag(np.asarray(g_nu, float)).astype(complex)

    def kernel(t, e):
        aL, aR = _spin_amplitudes_vector(t, e)
        q2 = -2.0 * M_E * t
        M = (-2.0 * np.sqrt(2.0) * G_F * (aL[:, None, None] * GL +
                                          aR[:, None, None] * GR)
             + (g_e / (q2 - m_V ** 2)) * (aL + aR)[:, None, None] * Gnu)
        r = _rate_flavour(M, rho)
        assert abs(r.imag) <= 1e-9 * abs(r.real) + 1e-300, r
        return r.real * _prefactor(e)

    return _loop(T, E, kernel)


def _scalar_spin_amplitudes(T, E):
    """[ubar(k2) u(k1)] [ubar(p2) u(p1)] for every spin configuration.

    The incoming neutrino is left-handed; the scalar bilinear ubar u =
    ubar (P_L + P_R) u only connects u(k1)=P_L u(k1) to the P_R (right-handed)
    part of the outgoing neutrino.  Both final neutrino basis states are
    summed; only the right-handed combination contributes.
    """
    k1, p1, k2, p2 = kinematics(T, E)
    u1 = _u_nu_left(k1)
    out = []
    for chi_nu in _CHI_BASIS:
        Snu = scalar_bilinear(spinor(k2, 0.0, chi_nu), u1)
        for chi_e1 in _CHI_BASIS:
            ue1 = spinor(p1, M_E, chi_e1)
            for chi_e2 in _CHI_BASIS:
                out.append(Snu * scalar_bilinear(spinor(p2, M_E, chi_e2), ue1))
    return np.array(out)


def dsigma_dT_scalar_mediator(T, E, g_nu, g_e, m_phi):
    """Pure scalar-exchange dsigma/dT [cm^2/MeV] (no SM interference).

    L ⊃ g_nu phi nubar nu + g_e phi ebar e (Dirac nu, flavour universal).
    i M = (i g_nu)(i g_e) i/(q^2 - m_phi^2) [ubar u][ubar u], so
    M = -g_nu g_e S_nu S_e / (q^2 - m_phi^2); the overall sign is irrelevant
    because there is no interference: the SM (vector, P_L) amplitude produces
    a left-handed final neutrino, the scalar one a right-handed final neutrino
    (chirality flip), and for massless neutrinos these are orthogonal final
    states, so sum_spins M_SM M_S^* = 0 identically (checked numerically in
    _self_checks).  The result is therefore SM + this term for any flavour.
    """
    def kernel(t, e):
        q2 = -2.0 * M_E * t
        M = -g_nu * g_e * _scalar_spin_amplitudes(t, e) / (q2 - m_phi ** 2)
        return np.sum(np.abs(M) ** 2) * _prefactor(e)

    return _loop(T, E, kernel)


# ============================================================ self checks
def _self_checks(verbose=True):
    """Checks reported in reference_xs_notes.md.  Not a pytest test."""
    from numpy.polynomial.legendre import leggauss
    res = {}
    p = print if verbose else (lambda *a, **k: None)
    s = SW2_DEFAULT
    gL, gR = tree_couplings(s)
    rho_e = np.diag([1.0, 0, 0]).astype(complex)
    rho_mu = np.diag([0, 1.0, 0]).astype(complex)

    # 0) Dirac algebra and kinematics sanity
    ac = max(np.abs(GAMMA[a] @ GAMMA[b] + GAMMA[b] @ GAMMA[a]
                    - 2 * METRIC[a, b] * ID4).max()
             for a in range(4) for b in range(4))
    k1, p1, k2, p2 = kinematics(0.3, 0.8613)
    comp = sum(np.outer(spinor(k2, 0, c), bar(spinor(k2, 0, c)))
               for c in _CHI_BASIS)
    kslash = sum(METRIC[m, m] * k2[m] * GAMMA[m] for m in range(4))
    p(f"clifford err {ac:.1e}; k2^2 = {mdot(k2, k2):.1e}; "
      f"completeness err {np.abs(comp - kslash).max():.1e}; "
      f"P_L u_L - u_L = {np.abs(P_L @ _u_nu_left(k1) - _u_nu_left(k1)).max():.1e}")

    # 1) textbook formula for pure flavours
    def textbook(T, E, gl, gr):
        return (2 * G_F ** 2 * M_E / np.pi * (gl ** 2 + gr ** 2 * (1 - T / E) ** 2
                - gl * gr * M_E * T / E ** 2)) * HBARC2
    worst = 0.0
    for fl, rho in ((0, rho_e), (1, rho_mu)):
        for E in (0.3, 0.8613, 1.44, 10.0):
            for f in (0.01, 0.3, 0.77, 0.999):
                T = f * t_max(E)
                a = dsigma_dT_general(T, E, rho, gL, gR)
                b = textbook(T, E, gL[fl], gR[fl])
                worst = max(worst, abs(a / b - 1))
                if verbose and E == 0.8613 and f in (0.01, 0.77):
                    p(f"  fl={fl} E={E} T={T:.5f}: num={a:.12e} "
                      f"textbook={b:.12e} rel={a / b - 1:.1e}")
    res['textbook_max_rel'] = worst
    p(f"max rel deviation from textbook (32 points): {worst:.2e}")

    # 2) total cross sections at 0.8613 MeV (integrand quadratic in T ->
    #    Gauss-Legendre is exact)
    E = 0.8613
    x, w = leggauss(12)
    Tm = t_max(E)
    Ts = 0.5 * Tm * (x + 1)
    for name, rho in (('nu_e', rho_e), ('nu_mu', rho_mu)):
        sig = 0.5 * Tm * np.sum(w * dsigma_dT_general(Ts, E, rho, gL, gR))
        fl = 0 if name == 'nu_e' else 1
        gl, gr = gL[fl], gR[fl]
        # closed-form integral of the textbook formula, for comparison only
        closed = 2 * G_F ** 2 * M_E / np.pi * HBARC2 * (
            gl ** 2 * Tm + gr ** 2 * E / 3 * (1 - (1 - Tm / E) ** 3)
            - gl * gr * M_E * Tm ** 2 / (2 * E ** 2))
        res['sigma_' + name] = sig
        p(f"sigma_tot({name}, E={E}) = {sig:.6e} cm^2 "
          f"(textbook integral {closed:.6e}, rel {sig / closed - 1:.1e})")

    # 3) heavy-mediator limit vs NSI.  Couplings chosen so eps ~ 0.2 at
    #    m_V = 1e5 MeV (a real test, not a vanishing perturbation).
    g_nu = np.array([0.5, -0.3, 0.2])
    rng = np.random.default_rng(1)
    A = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    rho_mix = A @ A.conj().T
    rho_mix /= np.trace(rho_mix)
    for mV in (1.0e5, 1.0e3):
        g_e = 0.15 * (mV / 1.0e5) ** 2      # keeps eps_ee ~ 0.23 for both m_V
        epsd = np.diag(g_nu) * g_e / (2 * np.sqrt(2) * G_F * mV ** 2)
        worst = 0.0
        for rho in (rho_e, rho_mu, rho_mix):
            for f in (0.05, 0.5, 0.95):
                T = f * Tm
                a = dsigma_dT_vector_mediator(T, E, rho, gL, gR, g_nu, g_e, mV)
                b = dsigma_dT_general(T, E, rho, gL, gR, epsd, epsd)
                worst = max(worst, abs(a / b - 1))
        res[f'heavy_limit_max_rel_mV{mV:.0e}'] = worst
        p(f"vector med. m_V={mV:.0e} MeV (eps_ee={epsd[0, 0].real:.3e}) vs "
          f"NSI eps=diag(g_nu) g_e/(2sqrt2 G_F m_V^2): max rel {worst:.2e} "
          f"(expected O(2 m_e T/m_V^2) <= {2 * M_E * Tm / mV ** 2:.0e})")
    # any m_V: equals NSI with T-dependent eps = g g/(2sqrt2 G_F(m_V^2+2 m T))
    # (fixes the propagator sign: q^2 - m_V^2 = -(m_V^2 + 2 m_e T))
    mV = 0.5
    g_nu_l, g_e_l = g_nu * 1e-6, 1e-6
    worst = 0.0
    for rho in (rho_e, rho_mu, rho_mix):
        for f in (0.01, 0.3, 0.9):
            T = f * Tm
            epsT = np.diag(g_nu_l) * g_e_l / (2 * np.sqrt(2) * G_F
                                             * (mV ** 2 + 2 * M_E * T))
            a = dsigma_dT_vector_mediator(T, E, rho, gL, gR, g_nu_l, g_e_l, mV)
            b = dsigma_dT_general(T, E, rho, gL, gR, epsT, epsT)
            worst = max(worst, abs(a / b - 1))
    res['light_mediator_vs_Tdep_eps_max_rel'] = worst
    p(f"vector med. m_V=0.5 MeV, g~1e-6 vs T-dependent eps: max rel {worst:.2e}")
    T = 0.1
    a = dsigma_dT_vector_mediator(T, E, rho_e, gL, gR, g_nu_l, g_e_l, mV)
    b = dsigma_dT_vector_mediator(T, E, rho_e, gL, gR, -g_nu_l, g_e_l, mV)
    p(f"  ratio to SM at T=0.1 (nu_e): g_nu g_e>0: "
      f"{a / dsigma_dT_general(T, E, rho_e, gL, gR):.6f}, g_nu g_e<0: "
      f"{b / dsigma_dT_general(T, E, rho_e, gL, gR):.6f}")

    # 4) scalar vs claimed closed form
    def scalar_claim(T, E, gn, ge, mphi):
        return (gn ** 2 * ge ** 2 * M_E * T * (2 * M_E + T)
                / (8 * np.pi * E ** 2 * (2 * M_E * T + mphi ** 2) ** 2)) * HBARC2
    worst = 0.0
    for E_ in (0.3, 0.8613, 5.0):
        for mphi in (0.01, 1.0, 100.0):
            for f in (0.02, 0.5, 1.0):
                T = f * t_max(E_)
                a = dsigma_dT_scalar_mediator(T, E_, 1e-6, 2e-6, mphi)
                b = scalar_claim(T, E_, 1e-6, 2e-6, mphi)
                worst = max(worst, abs(a / b - 1))
    res['scalar_claim_max_rel'] = worst
    p(f"scalar vs claimed closed form: max rel {worst:.2e}")
    # no interference: sum_spins M_SM M_S^* (same spin ordering)
    aL, aR = _spin_amplitudes_vector(0.3, E)
    S = _scalar_spin_amplitudes(0.3, E)
    interf = abs(np.sum((gL[0] * aL + gR[0] * aR) * S.conj()))
    scale = np.sqrt(np.sum(np.abs(gL[0] * aL + gR[0] * aR) ** 2)
                    * np.sum(np.abs(S) ** 2))
    res['sm_scalar_interference_rel'] = interf / scale
    p(f"|sum M_SM M_S^*| / sqrt(sum|M_SM|^2 sum|M_S|^2) = {interf / scale:.1e}")

    # 5) hermiticity / phase independence / index convention
    epsL = np.array([[0.1, 0.05 - 0.2j, 0.3j],
                     [0.05 + 0.2j, -0.1, 0.02],
                     [-0.3j, 0.02, 0.07]])
    epsR = np.array([[0.0, 0.1 + 0.1j, 0],
                     [0.1 - 0.1j, 0.2, -0.05j],
                     [0, 0.05j, 0.0]])
    w_, V = np.linalg.eigh(rho_mix)
    phases = np.exp(1j * rng.uniform(0, 2 * np.pi, 3))
    rho_rephased = (V * phases) @ np.diag(w_) @ (V * phases).conj().T
    T = 0.4
    a = dsigma_dT_general(T, E, rho_mix, gL, gR, epsL, epsR)
    b = dsigma_dT_general(T, E, rho_rephased, gL, gR, epsL, epsR)
    c = dsigma_dT_general(T, E, rho_mix.T, gL, gR, epsL, epsR)
    res['phase_rel'] = abs(a / b - 1)
    p(f"mixed rho + complex eps: {a:.10e}; rephased eigvecs rel {a / b - 1:.1e};"
      f" rho^T (wrong convention) differs by {c / a - 1:+.3e}")
    # direct coherent-state amplitude for a pure state, independent of rho
    psi = np.array([0.6, 0.48j, 0.64 * np.exp(0.7j)])
    psi /= np.linalg.norm(psi)
    GL = np.diag(gL) + epsL
    GR = np.diag(gR) + epsR
    aL, aR = _spin_amplitudes_vector(T, E)
    Mpsi = -2 * np.sqrt(2) * G_F * (aL[:, None] * (GL @ psi)[None, :]
                                    + aR[:, None] * (GR @ psi)[None, :])
    direct = np.sum(np.abs(Mpsi) ** 2) * _prefactor(E)
    viarho = dsigma_dT_general(T, E, np.outer(psi, psi.conj()), gL, gR,
                               epsL, epsR)
    res['pure_state_rel'] = abs(viarho / direct - 1)
    p(f"pure state psi: direct amplitude {direct:.10e}, via rho=|psi><psi| "
      f"{viarho:.10e}, rel {viarho / direct - 1:.1e}")
    return res


if __name__ == "__main__":
    import time
    t0 = time.time()
    _self_checks()
    t1 = time.time()
    gL, gR = tree_couplings()
    dsigma_dT_general(np.linspace(0.01, 0.6, 20), 0.8613,
                      np.diag([1, 0, 0]), gL, gR)
    print(f"self checks {t1 - t0:.2f} s; 20 points {time.time() - t1:.3f} s")
