"""The energy guard of docs/segmentation.md ("A second measure for photos like cross"), composed:
nearer-unexplained where E <= 0.8 and its final energy is below the seeds' run's, the default
elsewhere. Reads the results of this folder and of prior-cv-2026-11-27b/c; the energies come from
energy-sample.txt (the /tmp paths below are where they were first written)."""
import json
import os
O=os.path.dirname(os.path.abspath(__file__)); R=O[:-1]+"c"; B=O[:-1]+"b"
def load(f,label=None):
    d=json.load(open(f)); out={}
    for c in d["candidates"]:
        if label and c["candidate"]!=label: continue
        for s in c["scores"]:
            out[(s["dataset"],s["scribbles"],s["photo"])]=(s["error_rate"],s["iou"])
    return out
dflt={}
dflt.update(load(R+"/dev-cov.json","prior=15 prior-enclosure=8 prior-coverage=0.025"))
dflt.update(load(B+"/synth-sparse-g15.json","prior=15 prior-enclosure=8"))
dflt.update(load(R+"/synth-dense-cov.json"))
nu={}
for f in ["dev-nexp","synth-sparse-nexp","synth-dense-nexp"]: nu.update(load(O+f"/{f}.json"))
E={}
for l in open(R+"/enclosure.txt"):
    if l.startswith("#"): continue
    k,e,c=l.split(); E[tuple(k.split("|"))]=float(e)
en={}
mism=0
for f in [O+"/energy-sample.txt"]:
    for l in open(f):
        if l.startswith("#"): continue
        p=l.split(); k=tuple(p[0].split("|"))
        es,Es,_,enu,Enu,_=map(float,p[1:7]); en[k]=(Es,Enu)
        if abs(es-dflt[k][0])>1e-3 or abs(enu-nu[k][0])>1e-3: mism+=1
print("energies", len(en), "error mismatches vs eval", mism)
groups=[("grabcut-bsds-dev","scribbles-1"),("grabcut-bsds-dev","scribbles-2"),("grabcut-extra-dev","scribbles-1"),("grabcut-extra-dev","scribbles-2"),("synth-sparse","n1"),("synth-sparse","n3"),("synth-sparse","n3-wrong"),("synth-dense","n4"),("synth-dense","n8"),("synth-dense","n8-wrong")]
def comp(e0, guard):
    out={}
    for k in dflt:
        if E[k]<=e0 and (not guard or en[k][1] < en[k][0]): out[k]=nu[k]
        else: out[k]=dflt[k]
    return out
for name,sc in [("seeds",dflt),("nu 0.8",comp(0.8,False)),("nu 0.8 + energy guard",comp(0.8,True))]:
    cells=[]
    for g in groups:
        cs=[c for c in sc if c[:2]==g]
        cells.append("%.2f / %.1f"%(sum(sc[c][0] for c in cs)/len(cs), sum(sc[c][1] for c in cs)/len(cs)))
    print("| %s | %s | %.2f |"%(name," | ".join(cells), sum(v[0] for v in sc.values())/len(sc)))
