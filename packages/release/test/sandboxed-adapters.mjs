// Preloaded (`node --import`) by walkthroughs.test.ts: an adapter README's first example runs as pasted, with
// its adapter's factory given `baseUrl` = a loopback sandbox's URL, so nothing reaches the live provider.
// RS_SANDBOXED = { "<package>": { "factory": "create…Adapter", "baseUrl": "http://127.0.0.1:…" } }.
import { registerHooks } from 'node:module';

const sandboxed = JSON.parse(process.env.RS_SANDBOXED ?? '{}');
const PREFIX = 'rs-sandboxed:';
registerHooks({
  resolve: (specifier, context, next) =>
    Object.hasOwn(sandboxed, specifier) && !context.parentURL?.startsWith(PREFIX)
      ? { url: `${PREFIX}${specifier}#${next(specifier, context).url}`, shortCircuit: true }
      : next(specifier, context),
  load(url, context, next) {
    if (!url.startsWith(PREFIX)) return next(url, context);
    const [specifier, real] = url.slice(PREFIX.length).split('#');
    const { factory, baseUrl } = sandboxed[specifier];
    const source = `import * as real from '${real}';
export * from '${real}';
export const ${factory} = (options) => real.${factory}({ ...options, baseUrl: '${baseUrl}' });`;
    return { format: 'module', source, shortCircuit: true };
  },
});
