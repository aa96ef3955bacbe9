#!/bin/sh
# A sample module: does what a module may, and tries a few things it may not.
echo "hello from a sandboxed module: $(id)"
echo "working directory: $(pwd), TMPDIR=$TMPDIR"
echo "result" > "$HOME/output.txt" && echo "wrote \$HOME/output.txt: $(cat "$HOME/output.txt")"
echo "scratch" > "$TMPDIR/scratch" && echo "wrote \$TMPDIR/scratch"
if cat /etc/shadow >/dev/null 2>&1; then echo "UNEXPECTED: read /etc/shadow"; else echo "refused: reading /etc/shadow"; fi
if ls /root >/dev/null 2>&1; then echo "UNEXPECTED: listed /root"; else echo "refused: listing /root"; fi
if { echo x > /tmp/escape; } 2>/dev/null; then echo "UNEXPECTED: wrote /tmp/escape"; else echo "refused: writing /tmp"; fi
if cp /bin/true "$HOME/mytool" 2>/dev/null && "$HOME/mytool" 2>/dev/null; then
  echo "UNEXPECTED: ran a program written to work"
else
  echo "refused: executing a file written to work (exec_writable is false)"
fi
grep -E '^(NoNewPrivs|Seccomp|CapEff):' /proc/self/status
