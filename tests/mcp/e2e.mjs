// End-to-end test of `hutch mcp`, driven by the official MCP TypeScript SDK
// client over stdio against a real engine.
//
//   HUTCH_BIN=path/to/hutch HUTCH_TEST_ENGINE=unix:///... node e2e.mjs
//
// Run by tests/mcp/docker.test and podman.test (mcp-test.sh), which set
// both.  Exits non-zero when any test fails.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const bin = process.env.HUTCH_BIN;
const engine = process.env.HUTCH_TEST_ENGINE;
if (!bin || !engine) {
	console.error('e2e: HUTCH_BIN and HUTCH_TEST_ENGINE must be set');
	process.exit(2);
}
const session = `mcp-e2e-${process.pid}-${Date.now() % 100000}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function sessions() {
	return execFileSync(bin, ['--engine', engine, 'sessions', '--names'], {
		encoding: 'utf8',
	})
		.split('\n')
		.filter(Boolean);
}

const transport = new StdioClientTransport({
	command: bin,
	args: ['--engine', engine, 'mcp', '--session', session, '--rm'],
	// The libtool wrapper and the engine tests need the caller's
	// environment (LD_LIBRARY_PATH, HUTCH_IMAGE, TMPDIR...).
	env: { ...process.env },
	stderr: 'inherit',
});
const client = new Client({ name: 'hutch-e2e', version: '1.0.0' });
let closed = false;

after(async () => {
	if (!closed) await client.close().catch(() => {});
	// Belt and braces: never leave the session behind.
	try {
		execFileSync(bin, ['--engine', engine, 'rm', '--force', session], { stdio: 'ignore' });
	} catch {
		/* already gone */
	}
});

// One helper for the common case: the call must not be a tool error.
async function call(name, args, opts) {
	const r = await client.callTool({ name, arguments: args }, undefined, opts);
	assert.ok(!r.isError, `${name} ${JSON.stringify(args)} failed: ${r.content?.[0]?.text}`);
	return r;
}
const text = (r) => r.content.map((c) => c.text).join('');

const TOOLS = {
	exec: ['command'],
	read_file: ['path'],
	write_file: ['path', 'content'],
	edit_file: ['path', 'old_text', 'new_text'],
	grep: ['pattern'],
	find: ['pattern'],
	list_dir: [],
	delete_file: ['path'],
	move_file: ['from', 'to'],
	processes: [],
	process_output: ['id'],
	process_kill: ['id'],
};

test('a server without --session removes its own session at the end', async () => {
	const t = new StdioClientTransport({
		command: bin,
		args: ['--engine', engine, 'mcp'],
		env: { ...process.env },
		stderr: 'pipe',
	});
	let log = '';
	t.stderr?.on('data', (d) => (log += d));
	const c = new Client({ name: 'hutch-e2e-own', version: '1.0.0' });
	await c.connect(t);
	const r = await c.callTool({ name: 'exec', arguments: { command: 'true' } });
	assert.ok(!r.isError, r.content?.[0]?.text);
	const own = r.structuredContent.session;
	assert.match(own, /^mcp-[0-9a-f]{8}$/);
	assert.ok(sessions().includes(own), `${own} was made`);
	await c.close();
	// close() ends the server's stdin; it removes the session, then exits.
	for (let i = 0; i < 100 && sessions().includes(own); i++) await sleep(100);
	assert.ok(!sessions().includes(own), `${own} is left behind; server said: ${log}`);
});

test('initialize is answered without touching the engine', async () => {
	const t0 = Date.now();
	await client.connect(transport);
	const info = client.getServerVersion();
	assert.equal(info.name, 'hutch');
	assert.ok(client.getServerCapabilities().tools, 'tools capability');
	assert.match(client.getInstructions() ?? '', /\/workspace/);
	assert.ok(Date.now() - t0 < 5000, 'initialize took too long');
});

test('tools/list gives the twelve tools with strict schemas', async () => {
	const { tools } = await client.listTools();
	assert.deepEqual(tools.map((t) => t.name).sort(), Object.keys(TOOLS).sort());
	for (const t of tools) {
		assert.ok(t.description.length > 40, `${t.name}: a description for a model`);
		assert.equal(t.inputSchema.type, 'object');
		assert.equal(t.inputSchema.additionalProperties, false, `${t.name}: closed schema`);
		assert.deepEqual((t.inputSchema.required ?? []).sort(), TOOLS[t.name].slice().sort(),
			`${t.name}: required arguments`);
		for (const r of TOOLS[t.name])
			assert.ok(t.inputSchema.properties[r], `${t.name}.${r} described`);
		assert.equal(t.outputSchema?.type, 'object', `${t.name}: output schema`);
	}
	const exec = tools.find((t) => t.name === 'exec');
	assert.deepEqual(exec.inputSchema.properties.command.anyOf.map((s) => s.type), ['string', 'array']);
	// Lazy: listing the tools created nothing.
	assert.ok(!sessions().includes(session), 'session created before the first tool call');
});

test('exec: argv array, created lazily by the first call', async () => {
	const r = await call('exec', { command: ['echo', 'hello  world'] });
	assert.equal(r.structuredContent.exit_code, 0);
	assert.equal(r.structuredContent.status, 'ok');
	assert.equal(r.structuredContent.stdout, 'hello  world\n');
	assert.deepEqual(r.structuredContent.argv, ['echo', 'hello  world']);
	assert.equal(r.structuredContent.session, session);
	assert.match(text(r), /exit code 0/);
	assert.match(text(r), /hello {2}world/);
	assert.ok(sessions().includes(session), 'the first call created the session');
});

test('exec: shell string; a non-zero exit is a normal result', async () => {
	const r = await call('exec', { command: 'echo out; echo err >&2; exit 7' });
	assert.equal(r.isError, undefined);
	assert.equal(r.structuredContent.exit_code, 7);
	assert.equal(r.structuredContent.stdout, 'out\n');
	assert.equal(r.structuredContent.stderr, 'err\n');
	assert.match(text(r), /exit code 7/);
	assert.match(text(r), /err/);
});

test('exec: workdir and a timeout', async () => {
	await call('exec', { command: 'mkdir -p sub/dir' });
	const r = await call('exec', { command: ['pwd'], workdir: 'sub/dir' });
	assert.equal(r.structuredContent.stdout, '/workspace/sub/dir\n');
	// Long enough for a loaded engine to start the command and print.
	const t = await client.callTool({ name: 'exec', arguments: { command: 'echo before; sleep 30', timeout: 4 } });
	assert.equal(t.isError, true);
	assert.equal(t.structuredContent.status, 'timeout');
	assert.equal(t.structuredContent.exit_code, null);
	assert.equal(t.structuredContent.stdout, 'before\n');
	assert.match(text(t), /timed out/);
});

test('errors name the MCP tool and its parameters', async () => {
	await call('write_file', { path: 'twice.txt', content: 'x\nx\n' });
	const r = await client.callTool({ name: 'edit_file', arguments: { path: 'twice.txt', old_text: 'x', new_text: 'y' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /^edit_file: old_text occurs 2 times in 'twice.txt' \(lines 1, 2; exact match\)/);
	assert.match(text(r), /replace_all/);
	assert.doesNotMatch(text(r), /--all/);
	const n = await client.callTool({ name: 'read_file', arguments: { path: 'no-such-file' } });
	assert.match(text(n), /^read_file: 'no-such-file'/);
});

test('exec: env for one command', async () => {
	const r = await call('exec', { command: 'printf %s "$GREETING"', env: { GREETING: 'hi there', CI: '1' } });
	assert.equal(r.structuredContent.stdout, 'hi there');
	// Not the session's: the next command does not have it.
	const n = await call('exec', { command: 'printf %s "${GREETING-unset}"' });
	assert.equal(n.structuredContent.stdout, 'unset');
	const bad = await client.callTool({ name: 'exec', arguments: { command: 'true', env: { 'A=B': 'x' } } });
	assert.equal(bad.isError, true);
	assert.match(text(bad), /env name 'A=B'/);
});

test('background: start, list, read by offset until it ends, kill', async () => {
	// Waits for a file, so it runs when it is looked at, whatever the time.
	const r = await call('exec', {
		command: 'echo one; while [ ! -e go ]; do sleep 0.05; done; echo two >&2; exit 4',
		background: true,
	});
	const id = r.structuredContent.id;
	assert.match(id, /^p[0-9a-f]{8}$/);
	assert.equal(r.structuredContent.status, 'started');
	assert.equal(r.structuredContent.exit_code, null);
	assert.match(text(r), /process_output/);
	let l = await call('processes', {});
	let p = l.structuredContent.processes.find((e) => e.id === id);
	assert.equal(p.state, 'running');
	// Poll by offset, as an agent would: only what is new each time.
	let offset = 0, out = '', err = '';
	for (;;) {
		const o = await call('process_output', { id, offset });
		assert.equal(o.structuredContent.from, offset);
		out += o.structuredContent.stdout;
		err += o.structuredContent.stderr;
		offset = o.structuredContent.next;
		if (out === 'one\n') await call('exec', { command: 'touch go' });
		const st = o.structuredContent.process;
		if (st.state !== 'running' && offset === st.output_bytes) {
			assert.equal(st.exit_code, 4);
			break;
		}
	}
	assert.equal(out, 'one\n');
	assert.equal(err, 'two\n');
	l = await call('processes', {});
	p = l.structuredContent.processes.find((e) => e.id === id);
	assert.equal(p.state, 'exited');
	// A server, then process_kill: it is gone.
	const srv = await call('exec', { command: 'echo up; exec sleep 1000', background: true });
	await call('process_kill', { id: srv.structuredContent.id, signal: 'TERM' });
	for (;;) {
		l = await call('processes', {});
		p = l.structuredContent.processes.find((e) => e.id === srv.structuredContent.id);
		if (p.state !== 'running') break;
	}
	assert.equal(p.state, 'killed');
	assert.equal(p.signal, 15);
	const bad = await client.callTool({ name: 'process_output', arguments: { id: 'p00000000' } });
	assert.equal(bad.isError, true);
	assert.match(text(bad), /no background process 'p00000000'.*\n.*processes/s);
	const t = await client.callTool({ name: 'exec', arguments: { command: 'true', background: true, timeout: 5 } });
	assert.equal(t.isError, true);
	assert.match(text(t), /'timeout' does not apply/);
});

test('exec: stdin and user for one command', async () => {
	const r = await call('exec', { command: 'wc -c; tr a-z A-Z', stdin: 'a\u0000b\n' });
	assert.match(r.structuredContent.stdout, /^\s*4\n$/);
	const t = await call('exec', { command: ['tr', 'a-z', 'A-Z'], stdin: 'hello' });
	assert.equal(t.structuredContent.stdout, 'HELLO');
	// Without stdin the command reads an empty input, at once.
	const e = await call('exec', { command: 'wc -c' });
	assert.match(e.structuredContent.stdout, /^\s*0\n$/);
	const u = await call('exec', { command: 'echo $(id -u):$(id -g)', user: '1234:2345' });
	assert.equal(u.structuredContent.stdout, '1234:2345\n');
	const n = await call('exec', { command: 'id -u' });
	assert.notEqual(n.structuredContent.stdout, '1234\n');
});

test('file tools: write, read, edit, grep, find, list_dir', async () => {
	let r = await call('write_file', { path: 'src/hello.py', content: 'def greet():\n    return "hello"\n' });
	assert.equal(r.structuredContent.created, true);
	assert.equal(r.structuredContent.bytes, 32);
	assert.equal(r.structuredContent.path, 'src/hello.py');

	// Numbered as cat -n by default, the file's own numbers in a range.
	r = await call('read_file', { path: 'src/hello.py' });
	assert.equal(r.structuredContent.content, '     1\tdef greet():\n     2\t    return "hello"\n');
	assert.equal(r.structuredContent.line_numbers, true);
	assert.equal(r.structuredContent.total_lines, 2);
	assert.equal(text(r), '     1\tdef greet():\n     2\t    return "hello"\n');

	r = await call('read_file', { path: '/workspace/src/hello.py', offset: 2, limit: 1 });
	assert.equal(r.structuredContent.content, '     2\t    return "hello"\n');
	r = await call('read_file', { path: 'src/hello.py', offset: 2, line_numbers: false });
	assert.equal(r.structuredContent.content, '    return "hello"\n');
	assert.equal(text(r), '    return "hello"\n');

	r = await call('edit_file', { path: 'src/hello.py', old_text: 'return "hello"', new_text: 'return "hi"' });
	assert.equal(r.structuredContent.replacements, 1);
	assert.equal(r.structuredContent.match, 'exact');
	r = await call('exec', { command: ['cat', 'src/hello.py'] });
	assert.equal(r.structuredContent.stdout, 'def greet():\n    return "hi"\n');

	r = await call('grep', { pattern: 'return "h[a-z]+"', include: ['*.py'] });
	assert.deepEqual(r.structuredContent.matches, [{ path: 'src/hello.py', line: 2, text: '    return "hi"' }]);
	assert.match(text(r), /src\/hello\.py:2:/);
	r = await call('grep', { pattern: 'no such text anywhere' });
	assert.deepEqual(r.structuredContent.matches, []);

	r = await call('find', { pattern: '*.py' });
	assert.deepEqual(r.structuredContent.entries, [{ path: 'src/hello.py', type: 'file' }]);
	r = await call('find', { pattern: '*', type: 'directory' });
	assert.ok(r.structuredContent.entries.every((e) => e.type === 'dir'));
	assert.ok(r.structuredContent.entries.some((e) => e.path === 'src'));

	r = await call('list_dir', { path: 'src' });
	assert.equal(r.structuredContent.path, 'src');
	assert.deepEqual(r.structuredContent.entries.map((e) => [e.name, e.type]), [['hello.py', 'file']]);
	r = await call('list_dir', {});
	assert.ok(r.structuredContent.entries.some((e) => e.name === 'src' && e.type === 'dir'));
});

test('file tools: move_file and delete_file', async () => {
	await call('write_file', { path: 'tmp/a.txt', content: 'A\n' });
	await call('write_file', { path: 'tmp/b.txt', content: 'B\n' });
	let r = await call('move_file', { from: 'tmp/a.txt', to: 'tmp/moved/a.txt' });
	assert.deepEqual(r.structuredContent, { path: 'tmp/moved/a.txt', from: 'tmp/a.txt', type: 'file', replaced: false });

	// Errors speak the MCP tools' words, not the CLI's.
	r = await client.callTool({ name: 'move_file', arguments: { from: 'tmp/b.txt', to: 'tmp/moved/a.txt' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /^move_file: 'tmp\/moved\/a.txt' exists; with overwrite: true/);
	r = await call('move_file', { from: 'tmp/b.txt', to: 'tmp/moved/a.txt', overwrite: true });
	assert.equal(r.structuredContent.replaced, true);

	r = await client.callTool({ name: 'delete_file', arguments: { path: 'tmp' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /^delete_file: 'tmp' is a directory that is not empty; with recursive: true/);
	assert.doesNotMatch(text(r), /--recursive/);
	r = await call('delete_file', { path: 'tmp', recursive: true });
	assert.equal(r.structuredContent.removed, 3);
	r = await client.callTool({ name: 'delete_file', arguments: { path: '../etc/passwd' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /inside \/workspace/);
	r = await client.callTool({ name: 'edit_file', arguments: { path: 'src/hello.py', old_text: 'x', new_text: 'x' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /^edit_file: old_text and new_text are the same/);
});

test('failing calls are tool errors that say how to recover', async () => {
	let r = await client.callTool({ name: 'read_file', arguments: { path: '../../etc/passwd' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /inside \/workspace/);

	r = await client.callTool({ name: 'read_file', arguments: { path: '/etc/passwd' } });
	assert.equal(r.isError, true);

	r = await client.callTool({ name: 'read_file', arguments: { path: 'missing.txt' } });
	assert.equal(r.isError, true);
	assert.match(text(r), /list_dir|find/);

	r = await client.callTool({
		name: 'edit_file',
		arguments: { path: 'src/hello.py', old_text: 'def greet(name):\n    return "hi"', new_text: 'x' },
	});
	assert.equal(r.isError, true);
	assert.match(text(r), /old_text/);
	assert.match(text(r), /greet/, 'shows the closest region');

	// Arguments that break the schema: a tool error the model can read
	// (protocol 2025-11-25, SEP-1303), and the server goes on.
	r = await client.callTool({ name: 'exec', arguments: { command: 5 } });
	assert.equal(r.isError, true);
	assert.match(text(r), /'command'/);
	r = await client.callTool({ name: 'read_file', arguments: { path: 'a', bogus: 1 } });
	assert.equal(r.isError, true);
	assert.match(text(r), /unknown argument 'bogus'/);

	await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /-32602|unknown tool/i);
	await call('exec', { command: ['true'] });
});

test('calls overlap: a long exec does not hold up read_file', async () => {
	const t0 = Date.now();
	let execDone = 0;
	const long = call('exec', { command: 'sleep 4; echo slept' }).then((r) => {
		execDone = Date.now();
		return r;
	});
	await sleep(300);
	const r = await call('read_file', { path: 'src/hello.py' });
	const readDone = Date.now();
	assert.match(r.structuredContent.content, /greet/);
	assert.equal(execDone, 0, 'read_file waited for the exec');
	assert.ok(readDone - t0 < 3500, `read_file took ${readDone - t0} ms`);
	const l = await long;
	assert.equal(l.structuredContent.stdout, 'slept\n');
});

test('progress notifications while a command runs', async () => {
	const seen = [];
	const r = await call('exec', { command: 'for i in 1 2 3; do echo line $i; sleep 1; done' }, {
		onprogress: (p) => seen.push(p),
		resetTimeoutOnProgress: true,
	});
	assert.equal(r.structuredContent.stdout, 'line 1\nline 2\nline 3\n');
	assert.ok(seen.length >= 1, 'no progress notification');
	for (let i = 1; i < seen.length; i++)
		assert.ok(seen[i].progress > seen[i - 1].progress, 'progress must increase');
	assert.match(seen[0].message, /running/);
});

test('a cancelled call kills its command in the container', async () => {
	const ac = new AbortController();
	const marker = '6' + String(process.pid % 1000).padStart(3, '0');
	const running = client.callTool(
		{ name: 'exec', arguments: { command: `sleep ${marker}` } },
		undefined,
		{ signal: ac.signal },
	);
	const ps = async () => text(await call('exec', { command: ['ps'] }));
	// It runs (and shows up in ps) ...
	let seen = false;
	for (let i = 0; i < 40 && !seen; i++) {
		seen = (await ps()).includes(`sleep ${marker}`);
		if (!seen) await sleep(250);
	}
	assert.ok(seen, 'the long command never showed up in ps');
	ac.abort('test cancels');
	await assert.rejects(running);
	// ... and after the cancel it is gone.
	let gone = false;
	for (let i = 0; i < 40 && !gone; i++) {
		gone = !(await ps()).includes(`sleep ${marker}`);
		if (!gone) await sleep(250);
	}
	assert.ok(gone, 'the cancelled command still runs in the container');
	// The server still serves.
	const r = await call('exec', { command: ['echo', 'alive'] });
	assert.equal(r.structuredContent.stdout, 'alive\n');
});

test('closing the client removes the session (--rm)', async () => {
	await client.close();
	closed = true;
	let gone = false;
	for (let i = 0; i < 60 && !gone; i++) {
		gone = !sessions().includes(session);
		if (!gone) await sleep(250);
	}
	assert.ok(gone, `session ${session} is still there after the client left`);
});
