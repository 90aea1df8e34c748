"""Where the solver's iterations of ``nuejax combine``'s mediator stage go: the distinct rows of the
launches that ``probes/solver_launches_probe.py med --npz FILE`` kept, grouped by case (the
problem's size: 21 Borexino, 12 XENONnT, 29 the combination; the mass; z = the vector's
coupling scanned, p = the scalar's), and how many of them ended more than 10, 100 or 1000 above
their case's lowest −2 ln L, with their iterations.

    python far_rows.py FILE.npz
"""
import collections
import sys

import numpy as np
z=np.load(sys.argv[1], allow_pickle=True)
ks=sorted({int(k.split('_')[1]) for k in z.files if k.startswith('it_')})
rows=[]
for k in ks:
    it=z[f'it_{k}']; names=list(z[f'names_{k}']); m=z[f'mask_{k}']; p=z[f'pin_{k}']; x0=z[f'x0_{k}']
    iz=names.index('zprime_coupling'); ip=names.index('phi_coupling'); im=names.index('zprime_mass')
    seen=set()
    for r in range(it.shape[1]):
        sig=(x0[r].tobytes(), m[r].tobytes(), p[r].tobytes())
        if sig in seen: continue
        seen.add(sig)
        key=(len(names), round(float(p[r,im]),6), 'z' if (m[r,ip] and p[r,ip]==0) else 'p')
        pinned_c = bool(m[r,iz] and m[r,ip])
        val=(p[r,iz] if key[2]=='z' else p[r,ip]) if pinned_c else None
        rows.append(dict(k=k,r=r,key=key,val=val,it=it[0,r],f=it[1,r],st=it[2,r]))
best=collections.defaultdict(lambda: np.inf)
for q in rows: best[q['key']]=min(best[q['key']],q['f'])
tot=sum(q['it'] for q in rows)
print('distinct rows', len(rows), 'iterations', tot)
for thr in (10,100,1000):
    far=[q for q in rows if q['f']-best[q['key']]>thr]
    print(f'dchi2>{thr}: rows {len(far)}, iterations {sum(q["it"] for q in far)}, not converged {sum(q["st"]!=0 for q in far)}')
far=[q for q in rows if q['f']-best[q['key']]>1000]
c=collections.Counter((q['key'][0], q['key'][1], q['key'][2]) for q in far)
print(sorted(c.items()))
print()
for key in [(21,10.0,'z'),(29,1.0,'z')]:
    print(key, 'best', best[key])
    for q in rows:
        if q['key']==key and q['f']-best[key]>100:
            print('   launch',q['k'],'row',q['r'],'val',q['val'],'it',q['it'],'dchi2',round(q['f']-best[key],1),'st',q['st'])
