#!/usr/bin/env bash
# The "new user" test: for each client, a clean project in a temp dir outside
# the checkout installs the client from this checkout the way the client's
# README ("Install") says, runs a five-line program (connect, hold, release)
# against a private stack (tools/devstack.sh) and is removed afterwards.
#
#   tools/test-new-user.sh                     # python typescript go java
#   tools/test-new-user.sh go java             # some of them
#
# What the READMEs' install steps leave behind stays, as it would for a user:
# clients/python/build and *.egg-info (pip builds in place),
# clients/typescript/node_modules and dist/ (npm ci, npm pack),
# clients/java/target and the 0.1.0-SNAPSHOT jars in ~/.m2 (mvn install).
# Downloads come from the caches the client suites fill (pip's, npm's, Go's
# module and build caches, ~/.m2). Ends with `new-user: N passed, N failed`
# and exits non-zero if any client failed. HOLDFAST_KEEP_NEW_USER=1 keeps the
# temp projects and their logs (the path is printed first).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONDONTWRITEBYTECODE=1

clients=("$@")
((${#clients[@]})) || clients=(python typescript go java)
for c in "${clients[@]}"; do
  case "$c" in python | typescript | go | java) ;;
    *) echo "usage: $0 [python|typescript|go|java ...]" >&2; exit 2 ;;
  esac
done

work="$(mktemp -d "${TMPDIR:-/tmp}/hf-new-user.XXXXXX")"
case "$work/" in
  "$root"/*) echo "test-new-user: $work is inside the checkout; set TMPDIR elsewhere" >&2; exit 2 ;;
esac
stack="$work/stack"
cleanup() {
  if [ -d "$stack" ]; then
    bash "$root/tools/devstack.sh" down "$stack" >/dev/null 2>&1
    # PostgreSQL's directory for the stack (under /tmp, linked as stack/pg).
    [ -L "$stack/pg" ] && [ -z "${HOLDFAST_KEEP_NEW_USER:-}" ] && rm -rf "$(readlink "$stack/pg")"
  fi
  [ -n "${HOLDFAST_KEEP_NEW_USER:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# What the client suites need is what these need too.
bash "$root/tools/deps-clients-py-ts.sh" >/dev/null || exit 1
bash "$root/tools/deps-clients-go-java.sh" >/dev/null || exit 1
if [[ ! -x "${HOLDFASTD:-$root/build/daemon/holdfastd}" ]] || ! command -v redis-server >/dev/null; then
  echo "== building holdfastd"
  { bash "$root/tools/deps.sh" && bash "$root/tools/build.sh" release; } >"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log"; echo "test-new-user: daemon build failed" >&2; exit 1; }
fi

echo "== private stack in $stack"
if ! bash "$root/tools/devstack.sh" up "$stack" >"$work/stack.log" 2>&1; then
  cat "$work/stack.log"
  echo "new-user: 0 passed, ${#clients[@]} failed"
  exit 1
fi
export HOLDFAST_SOCKET="$stack/holdfast.sock"

# Each program holds seat A1 of its own partition and releases it; it prints
# "released 1" when both worked.
partition() { echo "new-user-$1-$$"; }

new_user_python() {
  cd "$work/python"
  "${PYTHON:-python3}" -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check "$root/clients/python"
  cat >app.py <<PY
from holdfast import Client, Seats
with Client() as client:  # \$HOLDFAST_SOCKET
    hold = client.hold("seat", "$(partition python)", Seats(["A1"]), ttl_ms=30_000)
    print("held", hold.target.ids, "fence", hold.fence)
    print("released", hold.release())
PY
  .venv/bin/python app.py
}

new_user_typescript() {
  cd "$work/typescript"
  local tgz
  tgz="$(cd "$root/clients/typescript" && npm ci --no-audit --no-fund --loglevel=error >&2 &&
    npm pack --pack-destination "$work/typescript" --loglevel=error | tail -1)"
  mkdir app && cd app
  npm init -y >/dev/null
  npm pkg set type=module
  npm install --no-audit --no-fund --loglevel=error --prefer-offline \
    "$work/typescript/$tgz" typescript@~5.9 @types/node@20
  cat >tsconfig.json <<'JSON'
{ "compilerOptions": { "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
                       "strict": true, "outDir": "dist" } }
JSON
  cat >app.ts <<TS
import { Client, seats } from "holdfast-client";
const client = new Client(); // \$HOLDFAST_SOCKET
const hold = await client.hold("seat", "$(partition typescript)", seats(["A1"]), { ttlMs: 30_000 });
console.log("held", hold.target, "fence", hold.fence);
console.log("released", await hold.release()); client.close();
TS
  npx tsc -p tsconfig.json
  node dist/app.js
}

new_user_go() {
  cd "$work/go"
  go mod init example.com/newuser
  go mod edit -replace "github.com/holdfast/holdfast/clients/go=$root/clients/go"
  cat >main.go <<GO
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/holdfast/holdfast/clients/go/holdfast"
)

func main() {
	ctx := context.Background()
	c, err := holdfast.Dial(ctx, os.Getenv("HOLDFAST_SOCKET"))
	check(err)
	defer c.Close()
	h, err := c.Hold(ctx, "seat", "$(partition go)", holdfast.Seats{"A1"}, 30*time.Second)
	check(err)
	fmt.Println("held", h.Target, "fence", h.Fence)
	n, err := h.Release(ctx)
	check(err)
	fmt.Println("released", n)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
GO
  go mod tidy
  go run .
}

new_user_java() {
  cd "$work/java"
  (cd "$root/clients/java" && mvn -B -ntp -q -DskipTests install)
  mkdir -p src/main/java
  cat >pom.xml <<'XML'
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>newuser</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency>
      <groupId>dev.holdfast</groupId>
      <artifactId>holdfast-client</artifactId>
      <version>0.1.0-SNAPSHOT</version>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-resources-plugin</artifactId>
        <version>3.3.1</version>
      </plugin>
      <plugin>
        <groupId>org.codehaus.mojo</groupId>
        <artifactId>exec-maven-plugin</artifactId>
        <version>3.5.0</version>
      </plugin>
    </plugins>
  </build>
</project>
XML
  cat >src/main/java/Main.java <<JAVA
import dev.holdfast.client.*;
import java.nio.file.Path;
import java.time.Duration;

public class Main {
  public static void main(String[] args) {
    try (HoldfastClient client = HoldfastClient.connect(Path.of(System.getenv("HOLDFAST_SOCKET")))) {
      Hold hold = client.hold("seat", "$(partition java)", Target.seats("A1")).ttl(Duration.ofSeconds(30)).acquire();
      System.out.println("held " + hold.target() + " fence " + hold.fence());
      System.out.println("released " + hold.release());
    }
  }
}
JAVA
  mvn -B -ntp -q compile exec:java -Dexec.mainClass=Main
}

passed=0 failed=0 failed_names=()
for c in "${clients[@]}"; do
  echo "== $c"
  mkdir -p "$work/$c"
  start=$SECONDS
  (set -e; "new_user_$c") >"$work/$c.log" 2>&1
  rc=$?
  if ((rc == 0)) && sed 's/\x1b\[[0-9;]*m//g' "$work/$c.log" | grep -qx "released 1"; then
    sed 's/\x1b\[[0-9;]*m//g' "$work/$c.log" | grep -E '^(held|released) ' | sed 's/^/  /'
    echo "PASS $c ($((SECONDS - start)) s)"
    passed=$((passed + 1))
  else
    echo "-- $c log (tail):"; tail -40 "$work/$c.log"
    echo "FAIL $c (exit $rc, $((SECONDS - start)) s)"
    failed=$((failed + 1)); failed_names+=("$c")
  fi
done

echo
((failed)) && echo "new-user: failed: ${failed_names[*]}"
echo "new-user: $passed passed, $failed failed"
((failed == 0))
