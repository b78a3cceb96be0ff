import { type Fenced, LedgerError, type Receipt } from '@retrysafe/contract';
import { RECOVERABLE_STATES, TERMINAL_STATES } from '@retrysafe/contract/ledger';

// Bad input is refused with a LedgerError before any statement is sent.

export const ALL_STATES = new Set<string>([...RECOVERABLE_STATES, ...TERMINAL_STATES]);

export function checkRef(ref: Fenced, what: string): void {
  if (!ref || typeof ref.businessOperationId !== 'string' || !Number.isInteger(ref.fence)) {
    throw new LedgerError(`${what}: a fenced reference { businessOperationId, fence } is required`);
  }
}

/** A receipt of the operation it is appended to (the UPDATE's guard checks its seq). */
export function checkReceiptShape(ref: Fenced, receipt: Receipt, what: string): void {
  if (receipt?.businessOperationId !== ref.businessOperationId)
    throw new LedgerError(
      `${what}: receipt belongs to ${receipt?.businessOperationId}, not ${ref.businessOperationId}`,
    );
}

/** An option that must be a finite number ≥ min (an integer when `integer`); its default when absent. */
export function numberOption(
  value: number | undefined,
  fallback: number,
  name: string,
  min: number,
  integer = false,
): number {
  const v = value ?? fallback;
  if (!(Number.isFinite(v) && v >= min && (!integer || Number.isInteger(v)))) {
    throw new LedgerError(`${name} must be ${integer ? 'an integer' : 'a number'} ≥ ${min}, got ${String(value)}`);
  }
  return v;
}

/** An option that must be one of `allowed`; the first is the default. */
export function oneOf<T extends string>(value: T | undefined, allowed: readonly T[], name: string): T {
  if (value === undefined) return allowed[0]!;
  if (!allowed.includes(value))
    throw new LedgerError(`${name} must be ${allowed.map((a) => `'${a}'`).join(' or ')}, got ${JSON.stringify(value)}`);
  return value;
}
