#!/bin/bash
# Second device call (twenty-second session): the first call's script (../timings/session.sh: the
# row-cost probe, then `nuejax borexino` and `nuejax xenonnt` first and warm on one H200), run
# again after cheap_rows lowered for the host's CPU device (a GPU lowering has no cost analysis;
# the first call found every problem costly). From the repository root, wheels in .whl/.
exec bash "$(dirname "$0")/../timings/session.sh"
