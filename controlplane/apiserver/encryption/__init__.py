"""Encryption at rest: what the API server does to a value between the registry and the store.

A Secret's ``data`` is only base64, not encrypted: anyone who can read etcd's files (a backup, a stolen
disk, ``etcdctl get``) reads every password. kube-apiserver can therefore **transform** each value on
its way to the store and back (``k8s.io/apiserver/pkg/storage/value``): the registry encodes an object
to JSON, the transformer encrypts the bytes, the store keeps the ciphertext under the same, plaintext
key (``/registry/secrets/default/db``). Reading runs the same steps backwards.

Which resources are encrypted, and how, is an ``EncryptionConfiguration`` (``config.py``): for each
list of resources, a list of **providers** (``identity``, ``aescbc``, ``aesgcm``, ``secretbox``), each
with named keys. The **first** provider (its first key) encrypts every write; **every** provider can
read, chosen by the prefix the value starts with (``transformer.py``)::

    k8s:enc:aescbc:v1:key1:<16-byte IV><AES-CBC ciphertext, PKCS#7 padded>      aescbc.py
    k8s:enc:aesgcm:v1:key1:<12-byte nonce><AES-GCM ciphertext and tag>          aesgcm.py
    k8s:enc:secretbox:v1:key1:<24-byte nonce><XSalsa20-Poly1305 box>            secretbox.py
    {"kind":"Secret",...}                                      (no prefix)       identity.py

So a key can be **rotated** without downtime: add the new key (readable), make it first (new writes
use it), rewrite every object (``rotation.py``), then remove the old one. A value that no provider can
read is answered as upstream does, with a 500 naming the key (``storage.py``); nothing is lost, it
stays in the store.

The modules, lowest first: ``transformer`` (the interface and prefix dispatch), the providers,
``config`` (parsing and validating the YAML, building the transformers), ``storage`` (the adapter the
registry and the watch cache call), ``clusterfile`` (a cluster's configuration file, its default and
its edits) and ``rotation`` (key rotation as services the management command and the instructor call).
"""
