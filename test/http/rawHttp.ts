/** Raw HTTP over a socket, for requests no HTTP client would send (malformed, or upgrades by hand). */
import net from 'node:net';

/** Sends `text` as is and returns the whole answer (the server closes the connection after it). */
export function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (c) => (answer += c.toString('latin1')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

/** The JSON body of a raw answer. */
export function rawJsonBody(answer: string): any { // eslint-disable-line @typescript-eslint/no-explicit-any
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
}
