/** Every line of the workspace's ledger: the legacy file, then each chain in the order they began. */
export function ledgerLines(dir: string): string[];
/** The records of the workspace's ledger, parsed (typed as `JSON.parse` types them), in `ledgerLines`' order. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON records, which the tests read field by field
export function ledgerRecords(dir: string): any[];
/** The ledger's size in bytes, all files together. */
export function ledgerSize(dir: string): number;
