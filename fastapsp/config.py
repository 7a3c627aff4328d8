"""Run files: a YAML mapping with the same settings as the ``solve`` flags."""

from __future__ import annotations

import dataclasses

from .errors import ConfigError, shorten
from .options import RUN_FILE_TYPES as _TYPES  # the one list of settings

__all__ = ["load_run_file", "merge_options", "MAX_RUN_FILE_BYTES"]

MAX_RUN_FILE_BYTES = 1 << 16  # a run file holds a few dozen settings



def load_run_file(path) -> dict:
    """Settings from a YAML run file; unknown keys and wrong types are errors.

    Keys use the flag names with ``_`` for ``-`` (``partition_file``).
    """
    import yaml

    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_RUN_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read run file: {exc.strerror or exc}") from None
    if len(raw) > MAX_RUN_FILE_BYTES:
        raise ConfigError(f"{path}: a run file of more than {MAX_RUN_FILE_BYTES} bytes; allowed: a short mapping "
                          "of settings")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a text file (byte {exc.start} is not UTF-8); allowed: a YAML mapping of "
                          "settings") from None
    try:
        # Anchors and aliases are refused before anything is built: a few hundred bytes of nested aliases
        # expand to gigabytes, and no setting needs them.
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                mark = event.start_mark
                raise ConfigError(f"{path} line {mark.line + 1}: YAML anchors and aliases are not allowed in a "
                                  "run file")
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {shorten(str(exc).splitlines()[0])}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run file must be a mapping of settings, found {type(data).__name__}")
    settings = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in _TYPES:
            raise ConfigError(f"{path}: unknown key {shorten(repr(key))}; allowed: {', '.join(sorted(_TYPES))}")
        want = _TYPES[name]
        if value is not None and want is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if value is not None and (not isinstance(value, want) or (want is int and isinstance(value, bool))):
            raise ConfigError(f"{path}: {shorten(str(key))} must be {want.__name__}, found {shorten(repr(value))}")
        settings[name] = value
    return settings


def merge_options(cls, file_settings: dict, flags: dict):
    """``cls`` (a dataclass) from its defaults, then the run file, then the flags given."""
    fields = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in file_settings.items() if k in fields}
    values.update({k: v for k, v in flags.items() if k in fields and v is not None})
    return cls(**values)
