import { errorClass } from '@retrysafe/contract/provider';

/**
 * The contract's errorClass, named, with `instanceof` by the marker too: the bundled root and the ./agent
 * and ./internal entries each hold a copy of core's error classes.
 */
export function coreErrorClass<A extends unknown[], F extends { message: string }>(
  name: string,
  code: string,
  build: (...args: A) => F,
) {
  const ErrorClass = errorClass(name, code, build);
  return Object.defineProperties(ErrorClass, {
    name: { value: name },
    [Symbol.hasInstance]: { value: ErrorClass.isInstance },
  });
}
