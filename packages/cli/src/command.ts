import { type Command, InvalidArgumentError, Option } from 'commander';

export const EXIT = { ok: 0, failed: 1, usage: 2, noEffect: 3, interrupted: 130 } as const;

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Whether stderr is a terminal (progress is redrawn in place there). Default: process.stderr.isTTY. */
  readonly errIsTTY?: boolean;
  /** Colour on stdout. Default: a TTY and NO_COLOR unset (FORCE_COLOR forces it). */
  readonly color?: boolean;
}

export interface Context {
  readonly io: Io;
  readonly color: boolean;
  readonly errColor: boolean;
  readonly errTTY: boolean;
  readonly json: (value: unknown) => void;
  /** Prints `value` as JSON with `--json`, else `text()`; returns exit 0, or 1 when not `ok`. */
  readonly print: (o: { readonly json?: boolean }, value: unknown, text: () => string, ok?: boolean) => number;
  /** The help text of the command these words name (the program's for none); undefined when there is none. */
  readonly help: (words: readonly string[]) => string | undefined;
}

/** One option, as data (the flag is the key in kebab case: `markDone` is `--mark-done`). */
export interface OptionConfig {
  readonly description: string;
  /** `<value>` for an option that takes a value; absent for a flag. */
  readonly argument?: string;
  /** `list`: repeatable or comma-separated (the help says so); `integer`: a non-negative integer. */
  readonly parse?: 'list' | 'integer';
  readonly choices?: readonly string[];
  readonly default?: string | number;
  readonly required?: boolean;
  /** The environment variable that gives the value when the flag is not (the help says so). */
  readonly env?: string;
  /** The options whose flags, when given, mean `env` is not read. */
  readonly envUnless?: readonly string[];
}

export type Options = Readonly<Record<string, OptionConfig>>;

/** The value commander gives an option: a list, an integer, one of its choices, a string, or a flag's true. */
type ValueOf<C> = C extends { parse: 'list' }
  ? string[]
  : C extends { parse: 'integer' }
    ? number
    : C extends { choices: readonly (infer T)[] }
      ? T
      : C extends { argument: string }
        ? string
        : boolean;
type Always<C> = C extends { required: true } | { default: unknown } ? true : false;

/** The options object `run` gets, derived from the options' data: a required option or one with a default is always there. */
export type Parsed<O extends Options> = {
  readonly [K in keyof O as Always<O[K]> extends true ? K : never]: ValueOf<O[K]>;
} & { readonly [K in keyof O as Always<O[K]> extends true ? never : K]?: ValueOf<O[K]> };

export interface CommandConfig {
  /** `drill`, `ledger ls`: a command is placed under the one its earlier words name. */
  readonly name: string;
  readonly description: string;
  readonly arguments?: readonly (readonly [name: string, description: string])[];
  readonly options?: Options;
  readonly helpAfter?: string;
  /** Absent for a group (`ledger`), which only holds commands. Returns the exit code. */
  readonly run?: (ctx: Context, options: never, args: readonly never[]) => Promise<number>;
}

/** Types `run`'s options from the options' data, and its positional arguments from `A`. */
export function defineCommand<const O extends Options = Record<never, OptionConfig>, A extends readonly unknown[] = []>(
  c: Omit<CommandConfig, 'run' | 'options'> & {
    readonly options?: O;
    readonly run?: (ctx: Context, options: Parsed<O>, args: A) => Promise<number>;
  },
): CommandConfig {
  return c as CommandConfig;
}

export const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** An option's value as `parse` says; a value that is itself an option (`--mark-done --db x`) means it was left out. */
function parseValue(o: OptionConfig, v: string, prev: string[] = []): string | string[] | number {
  if (v.startsWith('--')) throw new InvalidArgumentError(`it needs a value, but the next word is the option ${v}.`);
  if (o.parse === 'list') return [...prev, ...v.trim().split(/\s*,\s*/)].filter(Boolean);
  if (o.parse !== 'integer') return v;
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)))
    throw new InvalidArgumentError('expected a non-negative integer.');
  return Number(v);
}

function toOption(key: string, o: OptionConfig): Option {
  const description = o.parse === 'list' ? `${o.description} (repeatable or comma-separated)` : o.description;
  const option = new Option(`--${kebab(key)}${o.argument ? ` ${o.argument}` : ''}`, description);
  if (o.argument) option.argParser<unknown>((v, prev) => parseValue(o, v, prev as string[] | undefined));
  if (o.choices) option.choices(o.choices);
  if (o.default !== undefined) option.default(o.default);
  if (o.required) option.makeOptionMandatory();
  if (o.env) option.env(o.env);
  return option;
}

export function register(root: Command, c: CommandConfig, ctx: Context, setCode: (code: number) => void): void {
  const words = c.name.split(' ');
  let parent = root;
  for (const w of words.slice(0, -1)) parent = parent.commands.find((x) => x.name() === w) ?? parent.command(w);
  const cmd = parent.command(words.at(-1)!).description(c.description);
  for (const [name, description] of c.arguments ?? []) cmd.argument(name, description);
  for (const [key, o] of Object.entries(c.options ?? {})) cmd.addOption(toOption(key, o));
  if (c.helpAfter) cmd.addHelpText('after', c.helpAfter);
  const run = c.run;
  if (run)
    cmd.action(async (...given: unknown[]) => {
      const options = { ...(given.at(-2) as Record<string, unknown>) };
      for (const [key, o] of Object.entries(c.options ?? {}))
        if (cmd.getOptionValueSource(key) === 'env' && o.envUnless?.some((k) => options[k] !== undefined))
          delete options[key];
      setCode(await run(ctx, options as never, given.slice(0, -2) as never[]));
    });
}
