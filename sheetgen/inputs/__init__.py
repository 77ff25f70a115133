"""What the user brings: shapes files, GPU presets and preset TOML, transformer model configs."""
