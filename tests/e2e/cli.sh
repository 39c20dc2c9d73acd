# cli.sh -- the dpgd binary's dispatch: version, help, unknown commands.
. "$(dirname "$0")/lib.sh"

expect_ok version "$DPGD" --version
expect_out version '^dpgd [0-9]+\.[0-9]+\.[0-9]+$'
expect_ok "version command" "$DPGD" version
expect_out "version command" '^dpgd [0-9]+\.[0-9]+\.[0-9]+$'
expect_ok help "$DPGD" --help
expect_out help 'train'
expect_fail unknown-command "unknown command 'frobnicate'" "$DPGD" frobnicate
expect_fail no-command 'no command given' "$DPGD"

finish
