import { AdapterConfigurationError } from '../errors.js';

/** A positive whole-number adapter option, or its default; anything else is an AdapterConfigurationError. */
export function positiveInteger(provider: string, name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v <= 0)
    throw new AdapterConfigurationError(provider, `${name} must be a positive integer, got ${String(value)}`);
  return v;
}
