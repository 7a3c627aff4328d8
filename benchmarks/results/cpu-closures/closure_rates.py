import time, numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
import fastapsp
from fastapsp.partition import partition_graph
from fastapsp.stages import build_component_matrix, blocked_floyd_warshall
for name, ks in [('luxembourg_osm',(256,128,64)),('delaunay_n17',(512,256,128))]:
    g=fastapsp.read_graph(f'benchmarks/data/{name}.mtx.gz', cache='auto')
    for k in ks:
        p=partition_graph(g,k,'metis')
        v,nb=p.component(0)
        M=build_component_matrix(g.indptr,g.indices,g.weights,v,0,np.empty((0,g.n),np.float32))
        c=M.shape[0]; e=int(np.isfinite(M).sum())-c
        t=time.perf_counter(); F=blocked_floyd_warshall(M.copy()); tf=time.perf_counter()-t
        t=time.perf_counter()
        off=np.isfinite(M); np.fill_diagonal(off, False); r,cc=np.nonzero(off)
        D=dijkstra(csr_matrix((M[r,cc].astype(np.float64),(r,cc)),shape=M.shape)).astype(np.float32)
        td=time.perf_counter()-t
        print(name, k, 'c',c,'e',e, 'FW', round(tf,3), 'ns/c^3', round(tf/c**3*1e9,3), '| dijkstra', round(td,4), 'ns/(c(e+c)log2c)', round(td/(c*(e+c)*np.log2(c))*1e9,3), np.array_equal(F,D))
