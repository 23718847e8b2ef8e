"""Shell completion scripts for tsukuctl (bash, zsh, fish), generated ahead of time from
the parser by ``scripts/gen_completions.py``; ``tsukuctl completion SHELL`` prints one."""
