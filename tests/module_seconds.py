"""Worker-seconds of each test module on 2 cores, in the default suite and in the slow job: the
order in which pytest-xdist hands modules to its workers (tests/conftest.py: longest first, so that
no long module starts last while the other worker idles) and how .ci/run deals the slow job's files
to its three parts (greedy longest-processing-time). Plain data, no imports: .ci/run reads it
without importing the package.

Default column: the default suite of 2026-12-01 (`python -m pytest -n 2 --dist loadscope` in a
clean worktree, each module's seconds from its first test's start to its last test's end on its
worker, session fixtures included where the module built them). Slow column: CI's log and this
machine's runs of 2026-11-29, plus the tests of 5 s or more moved out of the default suite on
2026-12-01 at their durations there; test_combine.py's default seconds with the seeded-scan test
of 2026-12-01 (its module 32.7 s in a suite of 318 s, 25 s with the test made cheaper). A module
not listed counts :data:`UNLISTED` seconds.
"""

__all__ = ["DEFAULT", "SLOW", "UNLISTED", "seconds"]

#: worker-seconds in the default suite
DEFAULT = {
    "test_multidevice.py": 63, "test_limits.py": 57, "test_general_physics.py": 37, "test_model_equivalence.py": 30,
    "test_spectra.py": 28, "test_bounded_fits.py": 25, "test_detector.py": 23, "test_unbinned.py": 19,
    "test_model.py": 19, "test_branch_conditioning.py": 19, "test_borexino_analysis.py": 19, "test_inference.py": 18,
    "test_cross_section.py": 17, "test_input_checks.py": 16, "test_mean_grid.py": 16, "test_ahead.py": 16,
    "test_input_checks_io.py": 14, "test_transforms.py": 12, "test_combine.py": 25, "test_spec.py": 10,
    "test_flat_parameters.py": 9, "test_impacts.py": 9, "test_discrete_neyman.py": 9, "test_exported.py": 9,
    "test_reweighting.py": 8, "test_api_docs.py": 8, "test_xenonnt.py": 8, "test_architecture.py": 8,
    "test_rates_cli.py": 7, "test_pipeline.py": 7, "test_profile_errors.py": 7, "test_constraints.py": 5,
    "test_cache.py": 5, "test_oscillation.py": 5, "test_kernel_blocks.py": 5, "test_build_jit.py": 5,
}

#: worker-seconds in the slow job (``-m slow``)
SLOW = {
    "test_global_minima.py": 760, "test_combine.py": 550, "test_xenonnt.py": 480, "test_limits.py": 430,
    "test_borexino_analysis.py": 380, "test_limits_command.py": 370, "test_bounded_fits.py": 350,
    "test_fc_table.py": 330, "test_spec.py": 310, "test_general_physics.py": 280, "test_model_equivalence.py": 230,
    "test_discrete_neyman.py": 210, "test_inference.py": 210, "test_readme.py": 200, "test_model.py": 160,
    "test_closure.py": 150, "test_notebook.py": 140, "test_floating_response.py": 120, "test_spec_templates.py": 80,
    "test_exported.py": 70, "test_atomic.py": 70, "test_no_hang.py": 70, "test_impacts.py": 70,
    "test_branch_conditioning.py": 60, "test_profile_errors.py": 60, "test_variations.py": 60,
    "test_transforms.py": 50, "test_spectra.py": 50, "test_input_checks.py": 50, "test_ahead.py": 40,
    "test_mean_grid.py": 40, "test_cross_section.py": 40, "test_pipeline.py": 40, "test_unbinned.py": 40,
    "test_build_jit.py": 40, "test_template_model.py": 40, "test_cache.py": 40, "test_rates_cli.py": 40,
    "test_detector.py": 40,
}

#: the seconds of a module in neither table (of the slow job: a new module's slow tests)
UNLISTED = {"default": 2.0, "slow": 30.0}


def seconds(module: str, job: str) -> float:
    """Worker-seconds of the test module ``module`` (its file name) in ``job``: 'default' or 'slow'."""
    table = SLOW if job == "slow" else DEFAULT
    return float(table.get(module, UNLISTED[job]))
