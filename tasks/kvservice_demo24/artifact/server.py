"""kvservice: the small key-value store of the paper, served over HTTP with Flask.

Usage:
    python server.py [--config kvservice.ini] [--host HOST] [--port PORT]

Endpoints:
    GET  /health        -> {"status": "ok", "keys": <count>, "version": ...}
    PUT  /kv/<key>      body = the value (text); header X-Token must equal [auth] token
    GET  /kv/<key>      -> {"key": ..., "value": ...} or 404
    DELETE /kv/<key>    header X-Token as for PUT
Values are kept in <storage.data_dir>/store.json and survive a restart.
"""

import argparse
import configparser
import json
import os
import sys
import threading

from flask import Flask, abort, jsonify, request

VERSION = "1.2.0"


def load_config(path):
    if not os.path.exists(path):
        sys.exit(
            "kvservice: config file %s not found; copy kvservice.ini.example to %s "
            "and fill in [storage] data_dir and [auth] token" % (path, path)
        )
    cfg = configparser.ConfigParser()
    cfg.read(path)
    for section, key in (("storage", "data_dir"), ("auth", "token")):
        value = cfg.get(section, key, fallback="").strip()
        if not value or value == "CHANGE_ME":
            sys.exit("kvservice: %s: [%s] %s is not set" % (path, section, key))
    return cfg


class Store:
    def __init__(self, data_dir):
        os.makedirs(data_dir, exist_ok=True)
        self.path = os.path.join(data_dir, "store.json")
        self.lock = threading.Lock()
        self.data = {}
        if os.path.exists(self.path):
            with open(self.path) as f:
                self.data = json.load(f)

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f)
        os.replace(tmp, self.path)


def create_app(cfg):
    app = Flask(__name__)
    store = Store(cfg.get("storage", "data_dir"))
    token = cfg.get("auth", "token")

    def require_token():
        if request.headers.get("X-Token") != token:
            abort(403)

    @app.route("/health")
    def health():
        return jsonify(status="ok", keys=len(store.data), version=VERSION)

    @app.route("/kv/<key>", methods=["GET"])
    def get(key):
        if key not in store.data:
            abort(404)
        return jsonify(key=key, value=store.data[key])

    @app.route("/kv/<key>", methods=["PUT"])
    def put(key):
        require_token()
        with store.lock:
            store.data[key] = request.get_data(as_text=True)
            store.save()
        return jsonify(key=key, stored=True), 201

    @app.route("/kv/<key>", methods=["DELETE"])
    def delete(key):
        require_token()
        with store.lock:
            existed = store.data.pop(key, None) is not None
            store.save()
        return jsonify(key=key, deleted=existed)

    return app


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="kvservice.ini")
    ap.add_argument("--host", default=None)
    ap.add_argument("--port", type=int, default=None)
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    host = args.host or cfg.get("server", "host", fallback="127.0.0.1")
    port = args.port or cfg.getint("server", "port", fallback=8080)
    create_app(cfg).run(host=host, port=port)


if __name__ == "__main__":
    main()
