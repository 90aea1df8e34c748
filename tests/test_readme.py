"""The README's Python blocks run as written (in a subprocess, in order), and its two set-up
commands are the ones .ci/run and a newcomer run."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_has_the_two_setup_commands_and_stays_short():
    for marker, tail in (("<!-- main-command -->", "nuejax demo"), ("<!-- test-command -->", "pytest")):
        block = README.split(marker, 1)[1].split("```bash", 1)[1].split("```", 1)[0].strip()
        assert block.startswith("python3 -m venv .venv") and block.split("&&")[-1].strip().startswith(
            ("nuejax demo", "python -m pytest")), block
        assert tail in block
    assert len(README.splitlines()) <= 150


@pytest.mark.slow
def test_readme_python_blocks_run(tmp_path):
    code = "\n\n".join(re.findall(r"```python\n(.*?)```", README, flags=re.S))
    assert "borexino_like_model" in code
    script = tmp_path / "readme.py"
    script.write_text("import warnings\nwarnings.simplefilter('ignore')\n" + code + "\nprint('README OK')\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=1500, cwd=tmp_path)
    assert r.returncode == 0 and "README OK" in r.stdout, r.stderr[-3000:]
