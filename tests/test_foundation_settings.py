"""Every environment variable the settings read is documented in .env.example."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_env_example_lists_every_variable_the_settings_read():
    source = (ROOT / "memory_site" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|int|float|bool|list)\(\s*"([A-Z0-9_]+)"', source))
    documented = set(
        re.findall(r"^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), flags=re.MULTILINE)
    )
    assert len(read) > 40
    assert read - documented == set()
