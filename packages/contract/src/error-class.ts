const baseMarker = Symbol.for('retrysafe.error');

/** Base class of every retrysafe error; `isInstance` checks a `Symbol.for` marker, so it works across duplicate installs. */
export class RetrysafeError extends Error {
  readonly [baseMarker] = true;
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  static isInstance = markerGuard<RetrysafeError>(baseMarker);

  /** Plain JSON view (no stack, no cause), safe for receipts and logs. */
  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message };
  }
}

export function markerGuard<T>(symbol: symbol) {
  return (value: unknown): value is T =>
    typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[symbol] === true;
}

type ErrorFields<F> = RetrysafeError & Readonly<Omit<F, 'message'>>;

/** A class named `name` of the `build` fields' shape, marked `Symbol.for('retrysafe.error.<name>')`. */
export function errorClass<A extends unknown[], F extends { message: string }>(
  name: string,
  code: string,
  build: (...args: A) => F,
) {
  const marker = Symbol.for(`retrysafe.error.${name}`);
  const DefinedError = class extends RetrysafeError {
    constructor(...args: A) {
      const { message, ...fields } = build(...args);
      super(code, message);
      Object.assign(this, fields, { name, [marker]: true });
    }
    static override isInstance = markerGuard<ErrorFields<F>>(marker);
  };
  // `instanceof` by the marker too, so two copies of a package (a bundle and its subpath entries, or two
  // installs) recognise each other's errors.
  Object.defineProperties(DefinedError, {
    name: { value: name },
    [Symbol.hasInstance]: { value: DefinedError.isInstance },
  });
  return DefinedError as unknown as { new (...args: A): ErrorFields<F>; isInstance: typeof DefinedError.isInstance };
}
