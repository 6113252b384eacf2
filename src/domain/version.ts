/**
 * booblik's version, one constant for the broker (start line, METADATA, `--version`) and the CLI
 * (`booblik-cli --version`). A module of its own so that the CLI does not load the server to print it.
 * test/packaging checks it against package.json.
 */
export const BOOBLIK_VERSION = "0.1.0";
