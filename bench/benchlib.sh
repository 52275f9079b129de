# benchlib.sh: shell helpers the bench scripts share (sourced, not run).

# default_zstd_level ROOT: the writer's default zstd_level, read from the
# source (common/config.c) so a bench always measures what croft ships.
default_zstd_level() {
	sed -n 's/^[[:space:]]*cfg->zstd_level = \([0-9]*\);.*/\1/p' "$1/common/config.c"
}
