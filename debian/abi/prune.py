#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Keeps, of an abidw(1) corpus of libwzero.so.0, what the C ABI is made of: the exported C
# functions (the only function-decls abidw wrote, debian/libwzero0.abignore dropping the
# C++ ones) and the types they reach, so that the baseline debian/libwzero0.abi holds the C
# ABI and not the libstdc++ types of the translation units behind it (1.5 MB of them).
#   prune.py IN.xml OUT.xml
import sys
import xml.etree.ElementTree as ET

tree = ET.parse(sys.argv[1])
root = tree.getroot()
by_id = {}
parent = {}
for p in root.iter():
    for c in p:
        parent[c] = p
    if 'id' in p.attrib:
        by_id[p.attrib['id']] = p

keep = set()
todo = [e for e in root.iter('function-decl')]


def refs(elem):
    for e in elem.iter():
        for k, v in e.attrib.items():
            if k != 'id' and k.endswith('id') and v in by_id:
                yield by_id[v]


while todo:
    e = todo.pop()
    if e in keep:
        continue
    keep.add(e)
    todo.extend(refs(e))

# An element stays if it, an ancestor or a descendant is kept: kept types keep their
# namespaces and abi-instr; the corpus's symbol lists stay whole. The needed libraries go:
# their sonames are the build machine's, not the ABI.
def keep_ancestors(e):
    while e in parent:
        e = parent[e]
        keep.add(e)


for e in list(keep):
    for d in e.iter():
        keep.add(d)
for e in list(keep):
    keep_ancestors(e)
for top in list(root):
    if top.tag not in ('abi-instr', 'elf-needed'):
        for d in top.iter():
            keep.add(d)


def prune(p):
    for c in list(p):
        if c not in keep:
            p.remove(c)
        else:
            prune(c)


prune(root)
ET.indent(tree, space='  ')
tree.write(sys.argv[2], encoding='unicode')
