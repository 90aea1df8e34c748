#!/bin/bash
# Second device call (nineteenth session, at 54d05b6: launches of at least 8 rows on
# accelerators): the same commands as the first call, ../session.sh, run again.
exec bash "$(dirname "$0")/../session.sh"
