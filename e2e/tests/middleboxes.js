// Middleboxes between the browser and the Host, started by the tests themselves: Debian's own
// squid with its stock configuration (it refuses CONNECT to any port but 443, which is how a
// browser tunnels ws:// through a proxy), nginx as a plain reverse proxy (it passes no Upgrade
// header unless told to), and bin/pathproxy (internal/test/pathproxy), which breaks WebSockets
// the other ways real networks do and can open the path later.
const { spawn } = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const readline = require('readline');
const { freePort, waitFor } = require('./host');

const root = path.resolve(__dirname, '..', '..');

function tmpdir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o777); // squid drops to the user proxy
  return dir;
}

function stopper(proc) {
  return async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(t);
  };
}

// startSquid runs squid with /etc/squid/squid.conf unchanged but for where it listens and
// writes. server is the proxy's URL for a browser context; sockets() counts the WebSockets
// the browser tried through it, which it refused: a CONNECT (Chromium, Firefox tunnel ws://
// so), or a GET of a ws:// URL (WebKitGTK asks the proxy for the upgrade itself; squid answers
// 501).
async function startSquid() {
  const port = await freePort();
  const dir = tmpdir('lifeline-squid-');
  const stock = fs.readFileSync('/etc/squid/squid.conf', 'utf8');
  if (!/^http_port 3128$/m.test(stock)) throw new Error('squid: the stock config does not listen on http_port 3128 as expected');
  const conf = stock.replace(/^http_port 3128$/m, `http_port 127.0.0.1:${port}`) + [
    `pid_filename ${dir}/squid.pid`,
    `access_log stdio:${dir}/access.log`,
    `cache_log ${dir}/cache.log`,
    `coredump_dir ${dir}`,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'squid.conf'), conf);
  const logs = [];
  const proc = spawn('/usr/sbin/squid', ['-N', '-f', path.join(dir, 'squid.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  for (const s of [proc.stdout, proc.stderr]) readline.createInterface({ input: s }).on('line', (l) => logs.push(l));
  // Listening, not just started: squid writes its pid file before it opens its port, and a
  // browser sent to it in between fails (ERR_PROXY_CONNECTION_FAILED, once on a loaded machine).
  const accepts = () => new Promise((ok) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); ok(true); });
    s.once('error', () => ok(false));
  });
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`squid exited: ${logs.join('\n')}`);
    return fs.existsSync(path.join(dir, 'squid.pid')) && accepts();
  }, { what: 'squid to listen' });
  const log = () => { try { return fs.readFileSync(path.join(dir, 'access.log'), 'utf8'); } catch { return ''; } };
  return {
    server: `http://127.0.0.1:${port}`,
    sockets: () => log().split('\n').filter((l) => / (CONNECT 127\.0\.0\.1:|GET ws:\/\/127\.0\.0\.1:)/.test(l)).length,
    log,
    // allowConnect(port) is the administrator adding port to the ports CONNECT may reach
    // (the stock config's SSL_ports), and squid reloading its config.
    async allowConnect(to) {
      const conf = fs.readFileSync(path.join(dir, 'squid.conf'), 'utf8');
      if (!/^acl SSL_ports port 443$/m.test(conf)) throw new Error('squid: no "acl SSL_ports port 443" in the stock config');
      fs.writeFileSync(path.join(dir, 'squid.conf'), conf.replace(/^acl SSL_ports port 443$/m, `acl SSL_ports port 443\nacl SSL_ports port ${to}`));
      await run('/usr/sbin/squid', ['-k', 'reconfigure', '-f', path.join(dir, 'squid.conf')]);
    },
    stop: stopper(proc),
  };
}

// startPath puts bin/pathproxy in front of host in mode; mode(m) changes it (a path that is
// blocked again drops what went through it), upgrades() counts the upgrade requests it saw.
async function startPath(host, mode) {
  const proc = spawn(path.join(root, 'bin', 'pathproxy'), ['-backend', `http://127.0.0.1:${host.port}`, '-mode', mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: proc.stdout });
  const ready = await new Promise((ok, fail) => {
    lines.once('line', (l) => ok(JSON.parse(l)));
    proc.once('exit', (code) => fail(new Error(`pathproxy exited with ${code}`)));
  });
  return {
    url: (p = '/') => `http://${ready.listen}${p}`,
    async mode(m) {
      const res = await fetch(`http://${ready.control}/mode?mode=${m}`, { method: 'POST' });
      if (!res.ok) throw new Error(`pathproxy mode ${m}: ${res.status} ${await res.text()}`);
    },
    async upgrades() { return Number(await (await fetch(`http://${ready.control}/upgrades`)).text()); },
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.stdin.end();
      await exited;
    },
  };
}

// startNginx runs nginx as a plain reverse proxy in front of host: no Upgrade or Connection
// header is passed on (nginx drops hop-by-hop headers unless a config sets them), so every
// WebSocket handshake reaches the Host as a plain GET.
async function startNginx(host) {
  const port = await freePort();
  const dir = tmpdir('lifeline-nginx-');
  const conf = (upgrade) => fs.writeFileSync(path.join(dir, 'nginx.conf'), `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://127.0.0.1:${host.port};
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;${upgrade ? `
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_read_timeout 1h;` : ''}
    }
  }
}
`);
  conf(false);
  const proc = spawn('nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: ['ignore', 'inherit', 'inherit'] });
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`nginx exited with ${proc.exitCode}`);
    try { return (await fetch(`http://127.0.0.1:${port}/_lifeline/health`)).ok; } catch { return false; }
  }, { what: 'nginx to listen' });
  return {
    url: (p = '/') => `http://127.0.0.1:${port}${p}`,
    // passUpgrade is the operator fixing the config: nginx passes the upgrade on from now.
    async passUpgrade() {
      conf(true);
      await run('nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-s', 'reload']);
    },
    stop: stopper(proc),
  };
}

// run runs a command to its end, and fails with its output if it fails.
function run(cmd, args) {
  return new Promise((ok, fail) => {
    const out = [];
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout.on('data', (d) => out.push(d));
    p.stderr.on('data', (d) => out.push(d));
    p.once('error', fail);
    p.once('exit', (code) => (code === 0 ? ok() : fail(new Error(`${cmd} ${args.join(' ')}: exit ${code}: ${Buffer.concat(out)}`))));
  });
}

module.exports = { startSquid, startPath, startNginx };
