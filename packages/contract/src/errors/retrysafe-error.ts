const marker = Symbol.for('retrysafe.error');

/**
 * Base class of every retrysafe error. `isInstance` works across duplicate installs of the
 * package (it checks a `Symbol.for` marker, not the prototype chain).
 */
export class RetrysafeError extends Error {
  readonly [marker] = true;
  /** Stable machine-readable code, e.g. `RETRYSAFE_CONFLICT`. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  static isInstance(value: unknown): value is RetrysafeError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }

  /** Plain JSON view (no stack, no cause), safe for receipts and logs. */
  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message };
  }
}

/** Builds the `isInstance` guard for a subclass from its own `Symbol.for` marker. */
export function markerGuard<T>(symbol: symbol) {
  return (value: unknown): value is T =>
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[symbol] === true;
}
