import re
import tomllib
from pathlib import Path

CONFIG = Path(__file__).parents[3] / "configs" / "periapical-lesions" / "eval.toml"


def test_eval_config_pins_one_rewritable_revision() -> None:
    text = CONFIG.read_text(encoding="utf-8")
    revision_lines = [line for line in text.splitlines() if line.startswith("revision")]
    assert len(revision_lines) == 1
    assert re.fullmatch(r'revision = "[0-9a-f]{40}"', revision_lines[0])
    config = tomllib.loads(text)
    assert config["env"]["taskset"]["id"] == "periapical-lesions"
    assert config["env"]["agent"]["max_turns"] == 50
    assert config["env"]["agent"]["harness"]["version"]
