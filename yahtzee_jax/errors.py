"""User-facing errors: the CLI prints these as one line and exits with status 2."""


class UserError(ValueError):
    """A problem with the user's input (bad value, unknown name, missing file)."""


class ConfigError(UserError):
    """An invalid configuration value."""


class CheckpointError(UserError):
    """A missing, unreadable or incompatible checkpoint."""
