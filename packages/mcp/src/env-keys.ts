import type { Ledger } from '@retrysafe/contract';
import { encryptParams, parseReceiptKeys, type ReceiptKey } from '@retrysafe/core';

/**
 * The keys both MCP entry points (the server and the fence) take from the environment (docs/security.md):
 * `RETRYSAFE_PARAMS_KEYS=id:secret[,oldId:oldSecret]` encrypts stored params at rest (the first key
 * encrypts, the others still decrypt); `RETRYSAFE_RECEIPT_KEYS` HMAC-seals receipts.
 */
export function ledgerWithEnvKeys(opened: Ledger, env: NodeJS.ProcessEnv = process.env): Ledger {
  const keys = env.RETRYSAFE_PARAMS_KEYS ? parseReceiptKeys(env.RETRYSAFE_PARAMS_KEYS) : null;
  if (!keys) return opened;
  const previous = Object.entries(keys.keyring)
    .filter(([id]) => id !== keys.current.id)
    .map(([id, secret]) => ({ id, secret }));
  return encryptParams(opened, { key: keys.current, previous });
}

export function receiptKeyFromEnv(env: NodeJS.ProcessEnv = process.env): { receiptKey?: ReceiptKey } {
  return env.RETRYSAFE_RECEIPT_KEYS ? { receiptKey: parseReceiptKeys(env.RETRYSAFE_RECEIPT_KEYS).current } : {};
}
