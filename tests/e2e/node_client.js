// Node's own proxy idioms, as a module runs them inside sandbox-run (egress whole-system test).
//
//   node node_client.js get URL            http.request to the proxy with the absolute URL as
//                                          path: Node sends the proxy's address as Host
//   node node_client.js connect HOST:PORT CAFILE PATH
//                                          http.request({method: 'CONNECT'}), then TLS over the
//                                          tunnel and one GET PATH
//   node node_client.js keepalive URL...   one http.Agent({keepAlive: true, maxSockets: 1}):
//                                          the URLs in turn over one reused connection
//
// Prints "STATUS <code>" (with "reused=<bool>" for keepalive) then the body, per request;
// exit 0 when every request got 200, 1 when one was refused, 2 on any other error.
'use strict';
const http = require('http');
const tls = require('tls');
const fs = require('fs');

const proxy = new URL(process.env.http_proxy);
let worst = 0;

function request(url, agent) {
  return new Promise((resolve) => {
    const req = http.request({host: proxy.hostname, port: proxy.port, path: url, agent}, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => {
        const reused = agent ? ` reused=${req.reusedSocket}` : '';
        console.log(`STATUS ${res.statusCode}${reused}\n${body.trimEnd()}`);
        if (res.statusCode !== 200) worst = Math.max(worst, 1);
        resolve();
      });
    });
    req.setTimeout(15000, () => req.destroy(new Error('timeout')));
    req.on('error', (e) => {
      console.log(`ERROR ${e.message}`);
      worst = 2;
      resolve();
    });
    req.end();
  });
}

function connect(target, cafile, path) {
  return new Promise((resolve) => {
    const req = http.request({host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target});
    req.setTimeout(15000, () => req.destroy(new Error('timeout')));
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        console.log(`STATUS ${res.statusCode}`);
        worst = Math.max(worst, 1);
        socket.destroy();
        resolve();
        return;
      }
      const host = target.split(':')[0];
      const secure = tls.connect({socket, servername: host, ca: fs.readFileSync(cafile)}, () => {
        secure.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      });
      let response = '';
      secure.setEncoding('utf8');
      secure.on('data', (d) => { response += d; });
      secure.on('end', () => {
        const status = /^HTTP\/1\.[01] (\d{3})/.exec(response);
        console.log(`STATUS ${status ? status[1] : '?'}\n${response.split('\r\n\r\n').slice(1).join('').trimEnd()}`);
        if (!status || status[1] !== '200') worst = Math.max(worst, 1);
        resolve();
      });
      secure.on('error', (e) => {
        console.log(`ERROR ${e.message}`);
        worst = 2;
        resolve();
      });
    });
    req.on('error', (e) => {
      console.log(`ERROR ${e.message}`);
      worst = 2;
      resolve();
    });
    req.end();
  });
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  if (mode === 'get') {
    await request(args[0]);
  } else if (mode === 'connect') {
    await connect(args[0], args[1], args[2]);
  } else if (mode === 'keepalive') {
    const agent = new http.Agent({keepAlive: true, maxSockets: 1});
    for (const url of args) await request(url, agent);
    agent.destroy();
  } else {
    console.log('usage: node_client.js get|connect|keepalive ...');
    return 64;
  }
  return worst;
}

main().then((code) => { process.exitCode = code; });
