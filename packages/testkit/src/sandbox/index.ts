// The sandbox kit lives in @retrysafe/sandbox-kit (node built-ins only, no dependencies), so an
// adapter's `./sandbox` entry can depend on it without bringing core, the testkit or vitest into a
// production install. This subpath re-exports it unchanged for code written against the testkit.
export * from '@retrysafe/sandbox-kit';
